-- Detection dates (UTC) whose anomaly rows the upsert touches: the staged alerts' dates, and the
-- earlier dates of the source's stored alerts whose detection time moved. $1 = source.
SELECT DISTINCT strftime(d, '%Y-%m-%d') AS d FROM (
  SELECT detected_date AS d FROM _stage_anomalies
  UNION ALL
  SELECT a.detected_date FROM anomalies a JOIN _stage_anomalies s ON a.source = $1 AND s.id = a.id
) WHERE d IS NOT NULL
ORDER BY d
