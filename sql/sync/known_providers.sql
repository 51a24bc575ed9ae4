-- Providers a source has shown so far, to seed the provider split of full anomaly responses. $1 = source.
SELECT DISTINCT provider_type AS p FROM anomalies WHERE provider_type IS NOT NULL AND source = $1
UNION SELECT DISTINCT provider_type FROM line_items WHERE provider_type IS NOT NULL AND source = $1
