-- Each source's last finished run, and its last successful one, for the metrics file and status.
WITH finished AS (SELECT * FROM sync_runs WHERE outcome <> 'running'),
last AS (SELECT * FROM finished QUALIFY row_number() OVER (PARTITION BY source ORDER BY started_at DESC) = 1),
success AS (SELECT source, max(ended_at) AS at FROM finished WHERE outcome = 'success' GROUP BY source)
SELECT last.source, run_id, outcome, epoch(started_at) AS started_s, epoch(ended_at) AS ended_s,
       epoch(ended_at) - epoch(started_at) AS duration_s, coalesce(requests, 0) AS requests, coalesce(retries, 0) AS retries,
       coalesce(rate_limited, 0) AS rate_limited, coalesce(json_array_length(warnings), 0) AS warnings,
       coalesce(notifications_sent, 0) AS notifications_sent, coalesce(notification_failures, 0) AS notification_failures,
       epoch(success.at) AS last_success_s
FROM last LEFT JOIN success USING (source)
ORDER BY last.source
