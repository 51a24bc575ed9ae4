-- A send failed; the events stay pending for the next run. $1 = target, $2 = event ids, comma-separated, $3 = error (no URL in it).
UPDATE _costsync_notifications SET attempts = attempts + 1, last_error = $3
WHERE target = $1 AND list_contains(string_split($2, ','), event_id)
