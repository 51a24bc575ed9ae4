-- What did we spend each day per charge category, and what is its 7-day trend? (rollups; line items, as "uncategorized", for days without rollups)
CREATE OR REPLACE VIEW daily_spend_by_category AS
WITH rolled AS (
  SELECT date, category, sum(cost_usd) AS cost_usd, 'rollups' AS source
  FROM rollups_daily WHERE group_by = 'category' GROUP BY ALL
), items AS (
  SELECT usage_date AS date, coalesce(extra ->> 'charge_category', 'uncategorized') AS category, sum(net_amount_usd) AS cost_usd, 'line_items' AS source
  FROM line_items WHERE usage_date NOT IN (SELECT date FROM rollups_daily WHERE group_by = 'category') GROUP BY ALL
)
SELECT date, category, round(cost_usd, 2) AS cost_usd,
       round(avg(cost_usd) OVER (PARTITION BY category ORDER BY date RANGE BETWEEN INTERVAL 6 DAYS PRECEDING AND CURRENT ROW), 2) AS cost_7d_avg,
       source
FROM (SELECT * FROM rolled UNION ALL SELECT * FROM items);
COMMENT ON VIEW daily_spend_by_category IS 'Daily spend per charge category with a 7-day moving average (rollups; line items where rollups are missing)';
