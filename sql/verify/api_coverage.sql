-- What `verify --api` compares for one source: the dates its rollups stream says it synced (else the
-- dates it stores), and its line items' (else none). $1 = source.
WITH carried AS (
  SELECT (state->'rollups'->>'syncedFrom')::DATE AS ro_from, (state->'rollups'->>'syncedThrough')::DATE AS ro_to,
         (state->'line_items'->>'syncedFrom')::DATE AS li_from, (state->'line_items'->>'syncedThrough')::DATE AS li_to
  FROM _costsync_sync_state WHERE source = $1
), stored AS (SELECT min(date) AS ro_from, max(date) AS ro_to FROM rollups_daily WHERE source = $1)
SELECT coalesce((SELECT ro_from FROM carried), (SELECT ro_from FROM stored))::VARCHAR AS rollups_from,
       coalesce((SELECT ro_to FROM carried), (SELECT ro_to FROM stored))::VARCHAR AS rollups_to,
       (SELECT li_from FROM carried)::VARCHAR AS line_items_from,
       (SELECT li_to FROM carried)::VARCHAR AS line_items_to
