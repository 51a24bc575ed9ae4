-- The progress the warehouse carries per source, and when it was last written: what a sync with an empty
-- or another state directory goes on from.
SELECT source, state::VARCHAR AS state, strftime(updated_at AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%gZ') AS updated_at FROM _costsync_sync_state ORDER BY source
