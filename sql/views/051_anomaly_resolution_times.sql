-- How fast are anomalies closed? Each anomaly costsync first saw open (its first history row), from its
-- detection to the first sync that saw it `resolved`, `false_positive` or `dismissed`. The API gives no
-- time of closing, so this is an upper bound, late by up to one sync interval. An anomaly already closed
-- when first synced is left out: its first sync says when costsync looked, not when it was closed.
CREATE OR REPLACE VIEW anomaly_resolution_times AS
WITH first_seen AS (
  SELECT source, anomaly_id, min(observed_at) AS first_seen_at, arg_min(status, observed_at) AS first_status
  FROM anomaly_status_history GROUP BY source, anomaly_id
), closed AS (
  SELECT h.source, h.anomaly_id, min(h.observed_at) AS closed_seen_at, arg_min(h.status, h.observed_at) AS closed_status
  FROM anomaly_status_history h JOIN first_seen f USING (source, anomaly_id)
  WHERE h.status IN ('resolved', 'false_positive', 'dismissed')
    AND f.first_status NOT IN ('resolved', 'false_positive', 'dismissed') AND h.observed_at > f.first_seen_at
  GROUP BY h.source, h.anomaly_id
)
SELECT a.source, a.id AS anomaly_id, a.provider_type, a.service, a.severity, a.detected_date, c.closed_seen_at, c.closed_status,
       round(epoch(c.closed_seen_at - a.detected_date) / 3600, 1) AS hours_to_resolution
FROM closed c JOIN anomalies a ON a.source = c.source AND a.id = c.anomaly_id
ORDER BY a.detected_date DESC;
COMMENT ON VIEW anomaly_resolution_times IS 'Anomalies first seen open, with the hours from detection to the first sync that saw them closed (an upper bound, late by up to one sync interval; anomalies already closed when first synced are left out)';
