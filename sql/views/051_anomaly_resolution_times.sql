-- How fast are anomalies closed? Each closed anomaly's time from detection to the first time costsync saw it closed.
CREATE OR REPLACE VIEW anomaly_resolution_times AS
WITH closed AS (
  SELECT source, anomaly_id, min(observed_at) AS closed_seen_at, arg_min(status, observed_at) AS closed_status
  FROM anomaly_status_history WHERE status IN ('resolved', 'false_positive', 'dismissed') GROUP BY source, anomaly_id
)
SELECT a.source, a.id AS anomaly_id, a.provider_type, a.service, a.severity, a.detected_date, c.closed_seen_at, c.closed_status,
       round(epoch(c.closed_seen_at - a.detected_date) / 3600, 1) AS hours_to_resolution
FROM closed c JOIN anomalies a ON a.source = c.source AND a.id = c.anomaly_id
ORDER BY a.detected_date DESC;
COMMENT ON VIEW anomaly_resolution_times IS 'Closed anomalies per source with the hours from detection to when costsync first saw them closed (an upper bound: costsync sees a change at its next run)';
