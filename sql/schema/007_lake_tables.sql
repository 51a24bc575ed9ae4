-- The lake's tables as this warehouse last committed them (--format iceberg): each table's current
-- metadata file, for `costsync status` and engines registered by hand (Glue, Trino's register_table).
-- Recorded after each commit; a commit that landed before a crash is recorded by the next one.
CREATE TABLE IF NOT EXISTS _costsync_lake_tables (
  table_name    VARCHAR PRIMARY KEY,
  format        VARCHAR NOT NULL,
  metadata_file VARCHAR NOT NULL,
  snapshot_id   BIGINT,
  committed_at  TIMESTAMPTZ NOT NULL
);
