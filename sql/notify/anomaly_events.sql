-- Notification events for the staged anomalies, recorded before the upsert (it compares with what is
-- stored): new ones and ones whose severity rose, at or above the minimum severity and detected after
-- the cutoff; status changes when asked for. $1 = source, $2 = minimum severity rank (1 low .. 4
-- critical), $3 = cutoff time, $4 = include status changes, $5 = now, $6 = target.
WITH s AS (SELECT * FROM _stage_anomalies QUALIFY row_number() OVER (PARTITION BY id ORDER BY ord DESC) = 1),
ranked AS (
  SELECT s.*, a.id AS old_id, a.severity AS old_severity, a.status AS old_status,
         CASE s.severity WHEN 'low' THEN 1 WHEN 'medium' THEN 2 WHEN 'high' THEN 3 WHEN 'critical' THEN 4 ELSE 0 END AS rank,
         CASE a.severity WHEN 'low' THEN 1 WHEN 'medium' THEN 2 WHEN 'high' THEN 3 WHEN 'critical' THEN 4 ELSE 0 END AS old_rank
  FROM s LEFT JOIN anomalies a ON a.source = $1 AND a.id = s.id
), events AS (
  SELECT *, CASE
      WHEN old_id IS NULL THEN 'anomaly'
      WHEN rank > old_rank THEN 'severity_rose'
      WHEN $4::BOOLEAN AND status IS DISTINCT FROM old_status THEN 'status_changed'
    END AS kind
  FROM ranked
  WHERE rank >= $2
)
INSERT INTO _costsync_notifications (event_id, target, source, kind, event, created_at)
SELECT md5(concat_ws(':', $1, id, kind, CASE WHEN kind = 'status_changed' THEN status ELSE severity END)), $6, $1, kind,
       json_object('kind', kind, 'source', $1, 'id', id, 'provider', provider_type, 'service', service, 'severity', severity,
                   'previous_severity', old_severity, 'status', status, 'previous_status', old_status,
                   'actual_cost', actual_cost, 'expected_cost', expected_cost, 'deviation_percent', deviation_percent,
                   'alert_type', alert_type, 'detected_at', strftime(detected_date, '%Y-%m-%dT%H:%M:%SZ')),
       $5::TIMESTAMPTZ
FROM events
WHERE kind IS NOT NULL AND (kind = 'status_changed' OR detected_date >= $3::TIMESTAMPTZ)
ON CONFLICT DO NOTHING
