-- Replaces the carried sync state of one source (with carry_insert, in one transaction). $1 = source.
DELETE FROM _costsync_sync_state WHERE source = $1
