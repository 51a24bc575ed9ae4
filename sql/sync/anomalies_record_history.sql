-- A history row for every staged anomaly that is new or whose status changed. $1 = now, $2 = run id.
INSERT INTO anomaly_status_history
SELECT s.id, a.status, s.status, $1::TIMESTAMPTZ, $2
FROM (SELECT * FROM _stage_anomalies QUALIFY row_number() OVER (PARTITION BY id ORDER BY ord DESC) = 1) s
LEFT JOIN anomalies a ON a.id = s.id
WHERE a.id IS NULL OR a.status IS DISTINCT FROM s.status
ORDER BY s.id
