-- A run's notification counts, per source. $1 = run id, $2 = source, $3 = sent, $4 = failures.
UPDATE sync_runs SET notifications_sent = coalesce(notifications_sent, 0) + $3, notification_failures = coalesce(notification_failures, 0) + $4
WHERE run_id = $1 AND source = $2
