-- Providers each of several sources has shown so far, to seed the provider split of full anomaly
-- responses; one scan for every source that asks at its start. $1 = JSON list of sources.
WITH asked AS (SELECT unnest(from_json($1::VARCHAR, '["VARCHAR"]')) AS source)
SELECT source, provider_type AS p FROM anomalies WHERE provider_type IS NOT NULL AND source IN (SELECT source FROM asked)
UNION SELECT source, provider_type FROM line_items WHERE provider_type IS NOT NULL AND source IN (SELECT source FROM asked)
