-- Derived outputs (the published file, Parquet partitions, the lake manifest) are recorded here as
-- pending in the same transaction as the change that causes them, produced after the commit, and
-- deleted only once they are in place: a run killed in between leaves them for the next run.
CREATE TABLE IF NOT EXISTS _costsync_outbox (
  kind       VARCHAR NOT NULL,   -- publish, parquet or manifest
  key        VARCHAR NOT NULL,   -- parquet: <table>/<YYYY-MM-DD>; otherwise ''
  created_at TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (kind, key)
);

-- Each publish of the working copy over --db, per run.
ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS publishes INTEGER DEFAULT 0;
ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS last_published_at TIMESTAMPTZ;
ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS publish_bytes BIGINT;
ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS publish_seconds DOUBLE;

-- The anomaly stage is a temporary table now (created on every open), so no published file holds it.
DROP TABLE IF EXISTS _stage_anomalies;

-- Windows fetched again because their line items and rollups disagreed, per run and stream.
ALTER TABLE sync_run_streams ADD COLUMN IF NOT EXISTS refetches BIGINT DEFAULT 0;
