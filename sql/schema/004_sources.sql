-- Several sources (workspaces, each with its own key) in one warehouse: every table costsync writes
-- gets a `source` column, filled with 'default' for the rows already there (one source, as before).
-- Two sources may return the same line-item or anomaly id: they are different rows.
ALTER TABLE line_items ADD COLUMN IF NOT EXISTS source VARCHAR DEFAULT 'default';
ALTER TABLE rollups_daily ADD COLUMN IF NOT EXISTS source VARCHAR DEFAULT 'default';
ALTER TABLE anomaly_status_history ADD COLUMN IF NOT EXISTS source VARCHAR DEFAULT 'default';
ALTER TABLE sync_run_streams ADD COLUMN IF NOT EXISTS source VARCHAR DEFAULT 'default';
ALTER TABLE ingest_batches ADD COLUMN IF NOT EXISTS source VARCHAR DEFAULT 'default';

-- Tables keyed by id get (source, id) keys: rebuilt, same columns, source last.
CREATE TABLE anomalies_v4 (
  id                VARCHAR NOT NULL,
  provider_type     VARCHAR,
  service           VARCHAR,
  detected_date     TIMESTAMPTZ,
  actual_cost       DOUBLE,
  expected_cost     DOUBLE,
  deviation_percent DOUBLE,
  severity          VARCHAR,
  alert_type        VARCHAR,
  status            VARCHAR,
  extra             JSON,
  first_seen_at     TIMESTAMPTZ,
  last_seen_at      TIMESTAMPTZ,
  source            VARCHAR NOT NULL DEFAULT 'default',
  PRIMARY KEY (source, id)
);
INSERT INTO anomalies_v4 SELECT *, 'default' FROM anomalies;
DROP TABLE anomalies;
ALTER TABLE anomalies_v4 RENAME TO anomalies;

-- One row per run and source: each source's outcome.
CREATE TABLE sync_runs_v4 (
  run_id            VARCHAR NOT NULL,
  started_at        TIMESTAMPTZ NOT NULL,
  ended_at          TIMESTAMPTZ,
  outcome           VARCHAR NOT NULL,    -- running, success, failed, stopped, killed
  streams           VARCHAR,
  since_date        DATE,
  until_date        DATE,
  requests          BIGINT,
  retries           BIGINT,
  rate_limited      BIGINT,
  warnings          JSON,
  error             VARCHAR,
  publishes         INTEGER DEFAULT 0,
  last_published_at TIMESTAMPTZ,
  publish_bytes     BIGINT,
  publish_seconds   DOUBLE,
  source            VARCHAR NOT NULL DEFAULT 'default',
  PRIMARY KEY (run_id, source)
);
INSERT INTO sync_runs_v4 SELECT *, 'default' FROM sync_runs;
DROP TABLE sync_runs;
ALTER TABLE sync_runs_v4 RENAME TO sync_runs;
