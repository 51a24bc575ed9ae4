INSERT INTO sync_runs (run_id, started_at, outcome, streams, since_date, until_date)
VALUES ($1, $2::TIMESTAMPTZ, 'running', $3, $4::DATE, $5::DATE)
