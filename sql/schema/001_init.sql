-- The warehouse: synced tables, their staging tables, and run bookkeeping.

CREATE TABLE IF NOT EXISTS line_items (
  id                VARCHAR NOT NULL,
  usage_date        DATE NOT NULL,
  provider_type     VARCHAR,
  provider_service  VARCHAR,
  net_amount_usd    DOUBLE,
  currency_original VARCHAR,
  project_id        VARCHAR,
  user_email        VARCHAR,
  extra             JSON      -- fields the API sent that the spec does not list
);

CREATE TABLE IF NOT EXISTS rollups_daily (
  date          DATE NOT NULL,
  group_by      VARCHAR NOT NULL,  -- provider, service or category
  provider_type VARCHAR,
  service       VARCHAR,
  category      VARCHAR,
  cost_usd      DOUBLE,
  extra         JSON
);

CREATE TABLE IF NOT EXISTS anomalies (
  id                VARCHAR PRIMARY KEY,
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
  last_seen_at      TIMESTAMPTZ
);

-- One row each time costsync sees an anomaly in a status it did not have before.
CREATE TABLE IF NOT EXISTS anomaly_status_history (
  anomaly_id      VARCHAR NOT NULL,
  previous_status VARCHAR,          -- NULL when first seen
  status          VARCHAR NOT NULL,
  observed_at     TIMESTAMPTZ NOT NULL,
  run_id          VARCHAR
);

CREATE TABLE IF NOT EXISTS sync_runs (
  run_id       VARCHAR PRIMARY KEY,
  started_at   TIMESTAMPTZ NOT NULL,
  ended_at     TIMESTAMPTZ,
  outcome      VARCHAR NOT NULL,    -- running, success, failed, stopped
  streams      VARCHAR,
  since_date   DATE,
  until_date   DATE,
  requests     BIGINT,
  retries      BIGINT,
  rate_limited BIGINT,
  warnings     JSON,
  error        VARCHAR
);

CREATE TABLE IF NOT EXISTS sync_run_streams (
  run_id        VARCHAR NOT NULL,
  stream        VARCHAR NOT NULL,
  rows_inserted BIGINT,
  rows_updated  BIGINT,
  rows_deleted  BIGINT,
  pages         BIGINT,
  requests      BIGINT,
  retries       BIGINT,
  rate_limited  BIGINT,
  warnings      JSON
);

-- Staging for the anomaly upsert (line items and rollups stage pages in the spool directory).
CREATE TABLE IF NOT EXISTS _stage_anomalies (
  ord               INTEGER NOT NULL,
  id                VARCHAR,
  provider_type     VARCHAR,
  service           VARCHAR,
  detected_date     TIMESTAMPTZ,
  actual_cost       DOUBLE,
  expected_cost     DOUBLE,
  deviation_percent DOUBLE,
  severity          VARCHAR,
  alert_type        VARCHAR,
  status            VARCHAR,
  extra             JSON
);
