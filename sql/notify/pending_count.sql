-- Notifications recorded and not yet sent, to any webhook: what a run sends first.
SELECT count(*)::INTEGER AS n FROM _costsync_notifications WHERE sent_at IS NULL
