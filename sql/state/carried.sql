-- The sync state the warehouse carries for one source. $1 = source.
SELECT state::VARCHAR AS state FROM _costsync_sync_state WHERE source = $1
