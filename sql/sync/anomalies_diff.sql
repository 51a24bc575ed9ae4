-- Staged anomalies that are new, and those that changed in any field. $1 = source.
WITH s AS (SELECT * FROM _stage_anomalies QUALIFY row_number() OVER (PARTITION BY id ORDER BY ord DESC) = 1)
SELECT
  count(*) FILTER (WHERE a.id IS NULL) AS inserted,
  count(*) FILTER (WHERE a.id IS NOT NULL AND
    (a.provider_type, a.service, a.detected_date, a.actual_cost, a.expected_cost, a.deviation_percent,
     a.severity, a.alert_type, a.status, a.extra::VARCHAR)
    IS DISTINCT FROM
    (s.provider_type, s.service, s.detected_date, s.actual_cost, s.expected_cost, s.deviation_percent,
     s.severity, s.alert_type, s.status, s.extra::VARCHAR)) AS updated,
  0 AS deleted
FROM s LEFT JOIN anomalies a ON a.source = $1 AND a.id = s.id
