-- Dates of the status-history rows a run wrote. $1 = run id.
SELECT DISTINCT strftime(observed_at, '%Y-%m-%d') AS d FROM anomaly_status_history WHERE run_id = $1
