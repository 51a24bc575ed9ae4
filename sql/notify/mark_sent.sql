-- The receiver answered 2xx for these events. $1 = target, $2 = event ids, comma-separated, $3 = now.
UPDATE _costsync_notifications SET sent_at = $3::TIMESTAMPTZ, attempts = attempts + 1
WHERE target = $1 AND list_contains(string_split($2, ','), event_id)
