-- The lake's tables (--format iceberg): each one's current snapshot and metadata file, as this warehouse last committed them,
-- and the REST catalog they are committed through (empty: directory tables).
SELECT table_name AS "table", format, coalesce(catalog, '') AS catalog, CAST(snapshot_id AS VARCHAR) AS snapshot, metadata_file,
  strftime(committed_at, '%Y-%m-%dT%H:%M:%SZ') AS committed_at
FROM _costsync_lake_tables ORDER BY table_name
