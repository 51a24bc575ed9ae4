-- A history row for every staged anomaly that is new or whose status changed. $1 = now, $2 = run id, $3 = source.
INSERT INTO anomaly_status_history (anomaly_id, previous_status, status, observed_at, run_id, source)
SELECT s.id, a.status, s.status, $1::TIMESTAMPTZ, $2, $3
FROM (SELECT * FROM _stage_anomalies QUALIFY row_number() OVER (PARTITION BY id ORDER BY ord DESC) = 1) s
LEFT JOIN anomalies a ON a.source = $3 AND a.id = s.id
WHERE a.id IS NULL OR a.status IS DISTINCT FROM s.status
ORDER BY s.id
