-- Lake $1 holds every change of sources $2 (a JSON list) made so far: each one's mark is its latest change (0: none yet).
INSERT INTO _costsync_lake_marks
SELECT $1, s, coalesce((SELECT max(c.seq) FROM _costsync_partition_changes c WHERE c.source = sources.s), 0)
FROM (SELECT unnest(from_json($2, '["VARCHAR"]')) AS s) AS sources
