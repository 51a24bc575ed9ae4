-- The partitions of sources $2 (a JSON list) changed after lake $1's mark: what the lake must catch up on.
SELECT DISTINCT c.tbl AS "table", c.source, strftime(c.date, '%Y-%m-%d') AS date
FROM _costsync_partition_changes c
WHERE c.source IN (SELECT unnest(from_json($2, '["VARCHAR"]')))
  AND c.seq > coalesce((SELECT max(m.seq) FROM _costsync_lake_marks m WHERE m.lake = $1 AND m.source = c.source), 0)
