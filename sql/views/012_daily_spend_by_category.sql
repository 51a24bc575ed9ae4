-- What did we spend each day per charge category, and what is its 7-day trend? (rollups; line items, as "uncategorized", for days without rollups)
-- One row per source (workspace), day and category; `basis` says whether the figure comes from rollups or line items.
CREATE OR REPLACE VIEW daily_spend_by_category AS
WITH rolled AS (
  SELECT source, date, category AS category, sum(cost_usd) AS cost_usd, 'rollups' AS basis
  FROM rollups_daily WHERE group_by = 'category' GROUP BY ALL
), items AS (
  SELECT li.source, li.usage_date AS date, coalesce(li.extra ->> 'charge_category', 'uncategorized') AS category, sum(li.net_amount_usd) AS cost_usd, 'line_items' AS basis
  FROM line_items li
  ANTI JOIN (SELECT DISTINCT source, date FROM rollups_daily WHERE group_by = 'category') r ON r.source = li.source AND r.date = li.usage_date
  GROUP BY ALL
)
SELECT source, date, category, round(cost_usd, 2) AS cost_usd,
       round(avg(cost_usd) OVER (PARTITION BY source, category ORDER BY date RANGE BETWEEN INTERVAL 6 DAYS PRECEDING AND CURRENT ROW), 2) AS cost_7d_avg,
       basis
FROM (SELECT * FROM rolled UNION ALL SELECT * FROM items);
COMMENT ON VIEW daily_spend_by_category IS 'Daily spend per source and charge category with a 7-day moving average (basis: rollups, or line items where rollups are missing)';
