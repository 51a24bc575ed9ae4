-- A lake table's current metadata file after a commit. $1 = table, $2 = format, $3 = metadata file, $4 = snapshot id, $5 = when,
-- $6 = the REST catalog and namespace (null: a directory table).
INSERT OR REPLACE INTO _costsync_lake_tables (table_name, format, metadata_file, snapshot_id, committed_at, catalog)
VALUES ($1, $2, $3, $4, $5, $6)
