-- How many (source, date) pairs each reconciliation compared (the same pairs as differences.sql):
-- line items against the provider rollup where both are stored or one is missing on a date its stream
-- says it synced; the rollup groupings on every date with rollups. $1/$2 = first and last date (NULL: all).
WITH {{verify/covered}}, li AS (
  SELECT DISTINCT source, usage_date AS date FROM line_items
  WHERE ($1::DATE IS NULL OR usage_date >= $1::DATE) AND ($2::DATE IS NULL OR usage_date <= $2::DATE)
), ro AS (
  SELECT source, date, bool_or(group_by = 'provider') AS has_provider FROM rollups_daily
  WHERE ($1::DATE IS NULL OR date >= $1::DATE) AND ($2::DATE IS NULL OR date <= $2::DATE) GROUP BY source, date
), compared AS (
  SELECT source, date FROM (SELECT source, date FROM li UNION SELECT source, date FROM ro WHERE has_provider)
  WHERE ((source, date) IN (SELECT (source, date) FROM li) OR EXISTS (SELECT 1 FROM covered c WHERE c.covered_source = source AND c.covered_stream = 'line_items' AND date BETWEEN c.r['from'] AND c.r['to']))
    AND ((source, date) IN (SELECT (source, date) FROM ro WHERE has_provider) OR EXISTS (SELECT 1 FROM covered c WHERE c.covered_source = source AND c.covered_stream = 'rollups' AND date BETWEEN c.r['from'] AND c.r['to']))
)
SELECT (SELECT count(*) FROM compared) AS line_item_dates, (SELECT count(*) FROM ro) AS rollup_dates
