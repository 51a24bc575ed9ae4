-- Older dates the recheck found changed at the API, and how many of them a run synced again.
ALTER TABLE sync_run_streams ADD COLUMN IF NOT EXISTS older_changed BIGINT DEFAULT 0;
ALTER TABLE sync_run_streams ADD COLUMN IF NOT EXISTS older_synced BIGINT DEFAULT 0;
