-- Detection dates of the anomalies a run stored or updated. $1 = the run's start.
SELECT DISTINCT strftime(detected_date, '%Y-%m-%d') AS d FROM anomalies WHERE last_seen_at >= $1::TIMESTAMPTZ ORDER BY d
