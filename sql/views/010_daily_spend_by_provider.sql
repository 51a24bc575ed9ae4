-- What did we spend each day on each provider, and what is its 7-day trend? (rollups; line items for days without rollups)
-- One row per source (workspace), day and provider; `basis` says whether the figure comes from rollups or line items.
CREATE OR REPLACE VIEW daily_spend_by_provider AS
WITH rolled AS (
  SELECT source, date, provider_type AS provider, sum(cost_usd) AS cost_usd, 'rollups' AS basis
  FROM rollups_daily WHERE group_by = 'provider' GROUP BY ALL
), items AS (
  SELECT li.source, li.usage_date AS date, li.provider_type AS provider, sum(li.net_amount_usd) AS cost_usd, 'line_items' AS basis
  FROM line_items li
  ANTI JOIN (SELECT DISTINCT source, date FROM rollups_daily WHERE group_by = 'provider') r ON r.source = li.source AND r.date = li.usage_date
  GROUP BY ALL
)
SELECT source, date, provider, round(cost_usd, 2) AS cost_usd,
       round(avg(cost_usd) OVER (PARTITION BY source, provider ORDER BY date RANGE BETWEEN INTERVAL 6 DAYS PRECEDING AND CURRENT ROW), 2) AS cost_7d_avg,
       basis
FROM (SELECT * FROM rolled UNION ALL SELECT * FROM items);
COMMENT ON VIEW daily_spend_by_provider IS 'Daily spend per source and provider with a 7-day moving average (basis: rollups, or line items where rollups are missing)';
