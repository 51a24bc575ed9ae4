-- (A fragment.) The dates each source's windowed streams synced, as ranges (`covered` in the carried
-- state; a state an older costsync wrote has only syncedFrom..syncedThrough, taken as one range).
covered AS (
  SELECT covered_source, covered_stream, unnest(coalesce(
           from_json(json_extract(st, '$.covered'), '[{"from": "DATE", "to": "DATE"}]'),
           [{'from': json_extract_string(st, '$.syncedFrom')::DATE, 'to': json_extract_string(st, '$.syncedThrough')::DATE}])) AS r
  FROM (SELECT source AS covered_source, stream AS covered_stream, json_extract(state, '$.' || stream) AS st
        FROM _costsync_sync_state, (VALUES ('line_items'), ('rollups')) AS s(stream))
  WHERE st IS NOT NULL
)
