-- Marks pending, for lake $1, every partition of sources $2 (a JSON list) that changed after the lake's mark.
INSERT INTO _costsync_outbox
SELECT DISTINCT 'parquet', c.tbl || '/' || c.source || '/' || strftime(c.date, '%Y-%m-%d'), now()
FROM _costsync_partition_changes c
WHERE c.source IN (SELECT unnest(from_json($2, '["VARCHAR"]')))
  AND c.seq > coalesce((SELECT max(m.seq) FROM _costsync_lake_marks m WHERE m.lake = $1 AND m.source = c.source), 0)
  AND NOT EXISTS (SELECT 1 FROM _costsync_outbox o WHERE o.kind = 'parquet' AND o.key = c.tbl || '/' || c.source || '/' || strftime(c.date, '%Y-%m-%d'))
