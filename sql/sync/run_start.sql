-- A source's row of a run. $1 = run id, $2 = start, $3 = streams, $4/$5 = since and until, $6 = source.
INSERT INTO sync_runs (run_id, started_at, outcome, streams, since_date, until_date, source)
VALUES ($1, $2::TIMESTAMPTZ, 'running', $3, $4::DATE, $5::DATE, $6)
