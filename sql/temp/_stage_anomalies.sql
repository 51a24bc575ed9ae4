-- The anomaly stage: temporary, so it lives only in this connection and never in a published file.
-- Its columns follow the anomalies table's: the place in the response, then the fields the API sends.
CREATE TEMP TABLE IF NOT EXISTS _stage_anomalies AS
SELECT 0::INTEGER AS ord, * EXCLUDE (first_seen_at, last_seen_at, source) FROM anomalies WITH NO DATA
