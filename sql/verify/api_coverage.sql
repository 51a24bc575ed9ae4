-- What `verify --api` compares for one source: the ranges its streams say they synced; for a warehouse
-- that carries no state, the rollups' first..last stored date. $1 = source.
WITH {{verify/covered}}
SELECT covered_stream AS stream, r['from']::VARCHAR AS first, r['to']::VARCHAR AS last
FROM covered WHERE covered_source = $1 AND r['from'] IS NOT NULL
UNION ALL
SELECT 'rollups', min(date)::VARCHAR, max(date)::VARCHAR FROM rollups_daily
WHERE source = $1 AND NOT EXISTS (SELECT 1 FROM covered WHERE covered_source = $1 AND covered_stream = 'rollups')
HAVING count(*) > 0
ORDER BY 1, 2
