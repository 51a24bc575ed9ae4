-- Rows per synced table, for `costsync status`.
SELECT 'line_items' AS "table", count(*) AS rows, min(usage_date)::VARCHAR AS first_date, max(usage_date)::VARCHAR AS last_date FROM line_items
UNION ALL SELECT 'rollups_daily', count(*), min(date)::VARCHAR, max(date)::VARCHAR FROM rollups_daily
UNION ALL SELECT 'anomalies', count(*), min(detected_date)::DATE::VARCHAR, max(detected_date)::DATE::VARCHAR FROM anomalies
UNION ALL SELECT 'anomaly_status_history', count(*), min(observed_at)::DATE::VARCHAR, max(observed_at)::DATE::VARCHAR FROM anomaly_status_history
