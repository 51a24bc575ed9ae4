-- A notification that a run failed or stopped early, or that a window was stored although its views disagree. $1 = event id, $2 = target, $3 = source, $4 = kind, $5 = event, $6 = now.
INSERT INTO _costsync_notifications (event_id, target, source, kind, event, created_at)
VALUES ($1, $2, $3, $4, $5::JSON, $6::TIMESTAMPTZ)
ON CONFLICT DO NOTHING
