-- Events not yet sent to a webhook, oldest first. $1 = target, $2 = how many.
SELECT event_id, source, kind, event::VARCHAR AS event FROM _costsync_notifications
WHERE target = $1 AND sent_at IS NULL ORDER BY created_at, event_id LIMIT $2
