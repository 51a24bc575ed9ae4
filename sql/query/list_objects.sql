-- Tables and views of the warehouse with their columns and comments, for `costsync query --list`.
SELECT t.table_name AS name, lower(t.table_type) AS kind,
       string_agg(c.column_name || ' ' || c.data_type, ', ' ORDER BY c.ordinal_position) AS columns,
       any_value(coalesce(v.comment, d.comment)) AS about
FROM information_schema.tables t
JOIN information_schema.columns c ON c.table_schema = t.table_schema AND c.table_name = t.table_name
LEFT JOIN duckdb_views() v ON v.view_name = t.table_name AND v.schema_name = t.table_schema
LEFT JOIN duckdb_tables() d ON d.table_name = t.table_name AND d.schema_name = t.table_schema
WHERE t.table_schema = 'main' AND t.table_name NOT LIKE '\_%' ESCAPE '\'
GROUP BY ALL
ORDER BY kind, name
