-- The sync state a run needs to go on (per source: each stream's windows done, watermarks, the anomaly
-- watermark; not mid-window cursors or spooled pages, which stay in --state-dir), written in the
-- transaction of the data it describes, so every published warehouse carries the state that matches its
-- data and a run from an empty --state-dir goes on from it. One row per source (no key: rows are
-- replaced by delete and insert).
CREATE TABLE IF NOT EXISTS _costsync_sync_state (
  source     VARCHAR NOT NULL,
  state      JSON NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL
);
