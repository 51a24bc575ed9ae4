-- Providers seen so far, to seed the provider split of full anomaly responses.
SELECT DISTINCT provider_type AS p FROM anomalies WHERE provider_type IS NOT NULL
UNION SELECT DISTINCT provider_type FROM line_items WHERE provider_type IS NOT NULL
