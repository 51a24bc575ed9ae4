-- A publish of the run's data. $1 = run id, $2 = time, $3 = bytes, $4 = seconds.
UPDATE sync_runs
SET publishes = coalesce(publishes, 0) + 1, last_published_at = $2::TIMESTAMPTZ, publish_bytes = $3, publish_seconds = $4
WHERE run_id = $1
