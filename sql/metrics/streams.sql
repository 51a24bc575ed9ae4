-- The streams of each source's last finished run: rows changed and responses by status.
WITH last AS (
  SELECT source, run_id FROM sync_runs WHERE outcome <> 'running'
  QUALIFY row_number() OVER (PARTITION BY source ORDER BY started_at DESC) = 1
)
SELECT s.source, s.stream, coalesce(rows_inserted, 0) AS inserted, coalesce(rows_updated, 0) AS updated,
       coalesce(rows_deleted, 0) AS deleted, coalesce(responses::VARCHAR, '{}') AS responses,
       coalesce(older_changed, 0) AS older_changed, coalesce(older_synced, 0) AS older_synced
FROM sync_run_streams s JOIN last ON last.source = s.source AND last.run_id = s.run_id
ORDER BY s.source, s.stream
