-- The first carried sync state of a source (later ones update it: carry_update). $1 = source, $2 = state (JSON), $3 = now.
INSERT INTO _costsync_sync_state VALUES ($1, $2::JSON, $3::TIMESTAMPTZ)
