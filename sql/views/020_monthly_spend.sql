-- What did each source spend each month, and how much did it change from the month before?
CREATE OR REPLACE VIEW monthly_spend AS
WITH months AS (
  SELECT source, date_trunc('month', date)::DATE AS month, sum(cost_usd) AS cost_usd, count(DISTINCT date) AS days_with_data
  FROM daily_spend_by_provider GROUP BY ALL
)
SELECT source, month, round(cost_usd, 2) AS cost_usd, days_with_data,
       round(lag(cost_usd) OVER (PARTITION BY source ORDER BY month), 2) AS previous_month_usd,
       round(cost_usd - lag(cost_usd) OVER (PARTITION BY source ORDER BY month), 2) AS change_usd,
       round(100 * (cost_usd - lag(cost_usd) OVER (PARTITION BY source ORDER BY month)) / nullif(lag(cost_usd) OVER (PARTITION BY source ORDER BY month), 0), 1) AS change_pct
FROM months;
COMMENT ON VIEW monthly_spend IS 'Spend per source and month with the change from the month before, in dollars and percent';
