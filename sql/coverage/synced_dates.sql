-- (A fragment.) The dates each source's windowed streams hold as synced, one row per range: the one
-- place SQL reads a source's progress as the warehouse carries it (`_costsync_sync_state`, whose codec is
-- src/state/progress.ts). A row an older costsync wrote is the streams alone, not `{version, streams}`;
-- a stream state it wrote has only syncedFrom..syncedThrough, taken as one range.
SELECT source, stream, r['from'] AS from_date, r['to'] AS to_date
FROM (
  SELECT source, stream, unnest(coalesce(
           from_json(json_extract(st, '$.covered'), '[{"from": "DATE", "to": "DATE"}]'),
           [{'from': json_extract_string(st, '$.syncedFrom')::DATE, 'to': json_extract_string(st, '$.syncedThrough')::DATE}])) AS r
  FROM (SELECT source, stream, coalesce(json_extract(state, '$.streams.' || stream), json_extract(state, '$.' || stream)) AS st
        FROM _costsync_sync_state, (VALUES ('line_items'), ('rollups')) AS s(stream))
  WHERE st IS NOT NULL
)
WHERE r['from'] IS NOT NULL AND r['to'] IS NOT NULL
