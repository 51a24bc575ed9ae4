-- Forgets lake $1's marks of sources $2 (a JSON list), before the new ones are recorded.
DELETE FROM _costsync_lake_marks WHERE lake = $1 AND source IN (SELECT unnest(from_json($2, '["VARCHAR"]')))
