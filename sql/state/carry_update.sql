-- Replaces the carried sync state of one source; 0 rows when it carries none yet (then carry_insert).
-- $1 = source, $2 = state (JSON), $3 = now. One statement where a delete and an insert took two.
UPDATE _costsync_sync_state SET state = $2::JSON, updated_at = $3::TIMESTAMPTZ WHERE source = $1
