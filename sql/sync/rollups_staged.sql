-- Fragment: a window's spooled rollup pages (one per group_by) as rows, one per date and group.
-- $1 = the window's page glob, $2 and $3 = the window's first and last date; $columns = the spooled
-- rows' values cast to the table's columns, $fields = the stored columns before source (storage/tables.ts).
-- A page file is a JSON array of rows, each an array of values read as text (pages an earlier version
-- wrote as objects are rewritten so first: spool.ts).
SELECT $fields
FROM (SELECT $columns, filename
  FROM read_json($1, format = 'array', records = false, filename = true, maximum_object_size = 1048576,
    columns = {r: 'VARCHAR[]'}))
WHERE date BETWEEN $2::DATE AND $3::DATE
QUALIFY row_number() OVER (PARTITION BY date, group_by, provider_type, service, category
                           ORDER BY CAST(parse_filename(filename, true) AS INTEGER) DESC, o DESC) = 1
