-- Fragment: a window's spooled rollup pages (one per group_by) as rows, one per date and group.
-- $1 = the window's page glob, $2 and $3 = the window's first and last date.
SELECT * EXCLUDE (page, ord) FROM (
  SELECT
    CAST(rec->>'date' AS DATE) AS date,
    rec->>'group_by' AS group_by,
    rec->>'provider_type' AS provider_type,
    rec->>'service' AS service,
    rec->>'category' AS category,
    CAST(rec->>'cost_usd' AS DOUBLE) AS cost_usd,
    CAST(nullif(json_merge_patch(rec, '{"date":null,"group_by":null,"provider_type":null,"service":null,"category":null,"cost_usd":null}'), '{}') AS JSON) AS extra,
    CAST(parse_filename(filename, true) AS INTEGER) AS page,
    ord
  FROM (
    SELECT unnest(data) AS rec, unnest(generate_series(1, len(data))) AS ord, filename
    FROM read_json($1, columns = {data: 'JSON[]'}, filename = true, maximum_object_size = 4194304)
  )
)
WHERE date BETWEEN $2::DATE AND $3::DATE
QUALIFY row_number() OVER (PARTITION BY date, group_by, provider_type, service, category ORDER BY page DESC, ord DESC) = 1
