-- Every reconciliation difference above the tolerance, per source and date. Line items against the
-- provider rollup where both are stored, and also where one side is missing on a date its stream
-- says it synced (the carried state's synced range: a date with rollups and no line items is a
-- difference, not a date left out); the rollup groupings' totals against each other on every date
-- with rollups in any grouping (a grouping with none counts $0). Sums are exact (DECIMAL).
-- $1 = tolerance in dollars, $2/$3 = first and last date (NULL: all).
WITH {{verify/covered}}, li AS (
  SELECT source, usage_date AS date, provider_type AS provider, sum(net_amount_usd::DECIMAL(38, 6)) AS usd FROM line_items
  WHERE ($2::DATE IS NULL OR usage_date >= $2::DATE) AND ($3::DATE IS NULL OR usage_date <= $3::DATE) GROUP BY ALL
), ro AS (
  SELECT source, date, group_by, provider_type AS provider, cost_usd::DECIMAL(38, 6) AS cost_usd FROM rollups_daily
  WHERE ($2::DATE IS NULL OR date >= $2::DATE) AND ($3::DATE IS NULL OR date <= $3::DATE)
), by_provider AS (
  SELECT source, date, provider, sum(cost_usd) AS usd FROM ro WHERE group_by = 'provider' GROUP BY ALL
), li_dates AS (SELECT DISTINCT source, date FROM li
), ro_dates AS (SELECT DISTINCT source, date FROM by_provider
), line_vs_rollup AS (
  SELECT 'line items vs provider rollup' AS "check", source, date, provider,
         coalesce(li.usd, 0) AS left_usd, coalesce(by_provider.usd, 0) AS right_usd
  FROM li FULL OUTER JOIN by_provider USING (source, date, provider)
  WHERE ((source, date) IN (SELECT (source, date) FROM li_dates) OR EXISTS (SELECT 1 FROM covered c WHERE c.covered_source = source AND c.covered_stream = 'line_items' AND date BETWEEN c.r['from'] AND c.r['to']))
    AND ((source, date) IN (SELECT (source, date) FROM ro_dates) OR EXISTS (SELECT 1 FROM covered c WHERE c.covered_source = source AND c.covered_stream = 'rollups' AND date BETWEEN c.r['from'] AND c.r['to']))
), totals AS (
  SELECT source, date,
         coalesce(sum(cost_usd) FILTER (WHERE group_by = 'provider'), 0) AS provider_usd,
         coalesce(sum(cost_usd) FILTER (WHERE group_by = 'service'), 0) AS service_usd,
         coalesce(sum(cost_usd) FILTER (WHERE group_by = 'category'), 0) AS category_usd
  FROM ro GROUP BY source, date
), rollup_totals AS (
  SELECT 'provider vs service rollup totals' AS "check", source, date, NULL AS provider, provider_usd AS left_usd, service_usd AS right_usd
  FROM totals
  UNION ALL
  SELECT 'provider vs category rollup totals', source, date, NULL, provider_usd, category_usd
  FROM totals
)
SELECT "check", source, date, provider, round(left_usd, 2)::DOUBLE AS left_usd, round(right_usd, 2)::DOUBLE AS right_usd,
       round(left_usd - right_usd, 2)::DOUBLE AS difference_usd
FROM (SELECT * FROM line_vs_rollup UNION ALL SELECT * FROM rollup_totals)
WHERE abs(left_usd - right_usd) > $1
ORDER BY date, source, "check", provider
