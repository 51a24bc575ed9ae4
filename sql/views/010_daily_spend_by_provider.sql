-- What did we spend each day on each provider, and what is its 7-day trend? (rollups; line items for days without rollups)
CREATE OR REPLACE VIEW daily_spend_by_provider AS
WITH rolled AS (
  SELECT date, provider_type AS provider, sum(cost_usd) AS cost_usd, 'rollups' AS source
  FROM rollups_daily WHERE group_by = 'provider' GROUP BY ALL
), items AS (
  SELECT usage_date AS date, provider_type AS provider, sum(net_amount_usd) AS cost_usd, 'line_items' AS source
  FROM line_items WHERE usage_date NOT IN (SELECT date FROM rollups_daily WHERE group_by = 'provider') GROUP BY ALL
)
SELECT date, provider, round(cost_usd, 2) AS cost_usd,
       round(avg(cost_usd) OVER (PARTITION BY provider ORDER BY date RANGE BETWEEN INTERVAL 6 DAYS PRECEDING AND CURRENT ROW), 2) AS cost_7d_avg,
       source
FROM (SELECT * FROM rolled UNION ALL SELECT * FROM items);
COMMENT ON VIEW daily_spend_by_provider IS 'Daily spend per provider with a 7-day moving average (rollups; line items where rollups are missing)';
