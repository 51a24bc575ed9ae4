-- The latest runs, newest first, a row per source, for `costsync status`.
SELECT run_id, source, strftime(started_at, '%Y-%m-%dT%H:%M:%SZ') AS started_at, strftime(ended_at, '%Y-%m-%dT%H:%M:%SZ') AS ended_at,
       outcome, streams, requests, retries, rate_limited, json_array_length(warnings) AS warnings
FROM sync_runs ORDER BY started_at DESC, source LIMIT 10
