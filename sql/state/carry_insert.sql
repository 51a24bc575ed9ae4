-- The carried sync state of one source. $1 = source, $2 = state (JSON), $3 = now.
INSERT INTO _costsync_sync_state VALUES ($1, $2::JSON, $3::TIMESTAMPTZ)
