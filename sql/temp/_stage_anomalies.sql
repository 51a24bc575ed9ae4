-- The anomaly stage: temporary, so it lives only in this connection and never in a published file.
CREATE TEMP TABLE IF NOT EXISTS _stage_anomalies (
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
)
