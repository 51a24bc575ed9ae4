-- Lake $1 is known to be written with sources $2 (a JSON list): a source it has no mark for gets mark 0 (no change
-- held yet), the same as no mark to the catch-up, so status can say the lake is behind before its first catch-up ends.
INSERT INTO _costsync_lake_marks
SELECT $1, s, 0 FROM (SELECT unnest(from_json($2, '["VARCHAR"]')) AS s) AS sources
WHERE NOT EXISTS (SELECT 1 FROM _costsync_lake_marks m WHERE m.lake = $1 AND m.source = sources.s)
