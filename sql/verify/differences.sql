-- Every reconciliation difference above the tolerance, per source, on dates both sides hold.
-- $1 = tolerance in dollars, $2/$3 = first and last date (NULL: all).
WITH li AS (
  SELECT source, usage_date AS date, provider_type AS provider, sum(net_amount_usd) AS usd FROM line_items
  WHERE ($2::DATE IS NULL OR usage_date >= $2::DATE) AND ($3::DATE IS NULL OR usage_date <= $3::DATE) GROUP BY ALL
), ro AS (
  SELECT source, date, group_by, provider_type AS provider, cost_usd FROM rollups_daily
  WHERE ($2::DATE IS NULL OR date >= $2::DATE) AND ($3::DATE IS NULL OR date <= $3::DATE)
), by_provider AS (
  SELECT source, date, provider, sum(cost_usd) AS usd FROM ro WHERE group_by = 'provider' GROUP BY ALL
), line_vs_rollup AS (
  SELECT 'line items vs provider rollup' AS "check", source, date, provider,
         coalesce(li.usd, 0) AS left_usd, coalesce(by_provider.usd, 0) AS right_usd
  FROM li FULL OUTER JOIN by_provider USING (source, date, provider)
  WHERE (source, date) IN (SELECT (source, date) FROM li) AND (source, date) IN (SELECT (source, date) FROM by_provider)
), totals AS (
  SELECT source, date,
         sum(cost_usd) FILTER (WHERE group_by = 'provider') AS provider_usd,
         sum(cost_usd) FILTER (WHERE group_by = 'service') AS service_usd,
         sum(cost_usd) FILTER (WHERE group_by = 'category') AS category_usd
  FROM ro GROUP BY source, date
), rollup_totals AS (
  SELECT 'provider vs service rollup totals' AS "check", source, date, NULL AS provider, provider_usd AS left_usd, service_usd AS right_usd
  FROM totals WHERE provider_usd IS NOT NULL AND service_usd IS NOT NULL
  UNION ALL
  SELECT 'provider vs category rollup totals', source, date, NULL, provider_usd, category_usd
  FROM totals WHERE provider_usd IS NOT NULL AND category_usd IS NOT NULL
)
SELECT "check", source, date, provider, round(left_usd, 2) AS left_usd, round(right_usd, 2) AS right_usd, round(left_usd - right_usd, 2) AS difference_usd
FROM (SELECT * FROM line_vs_rollup UNION ALL SELECT * FROM rollup_totals)
WHERE abs(left_usd - right_usd) > $1
ORDER BY date, source, "check", provider
