-- A source's outcome of a run. $9 = source.
UPDATE sync_runs
SET ended_at = $2::TIMESTAMPTZ, outcome = $3, requests = $4, retries = $5, rate_limited = $6, warnings = $7::JSON, error = $8
WHERE run_id = $1 AND source = $9
