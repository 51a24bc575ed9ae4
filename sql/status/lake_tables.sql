-- The lake's tables (--format iceberg): each one's current metadata file, as this warehouse last committed it.
SELECT table_name AS "table", format, metadata_file, strftime(committed_at, '%Y-%m-%dT%H:%M:%SZ') AS committed_at
FROM _costsync_lake_tables ORDER BY table_name
