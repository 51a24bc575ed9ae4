-- What did each source spend each month, and how much did it change from the month before?
-- A month whose data does not cover it whole (the month in progress, or a first month that starts
-- after the 1st) is partial: `is_partial`, and no change is given against it or for it, since a part
-- month against a whole one is no fall and no rise.
CREATE OR REPLACE VIEW monthly_spend AS
WITH months AS (
  SELECT source, date_trunc('month', date)::DATE AS month, sum(cost_usd) AS cost_usd, count(DISTINCT date) AS days_with_data,
         min(date) AS first_date, max(date) AS last_date
  FROM daily_spend_by_provider GROUP BY ALL
), marked AS (
  SELECT *, first_date > month OR last_date < last_day(month) AS is_partial,
         lag(cost_usd) OVER w AS previous_cost, lag(first_date > month OR last_date < last_day(month)) OVER w AS previous_partial
  FROM months WINDOW w AS (PARTITION BY source ORDER BY month)
)
SELECT source, month, round(cost_usd, 2) AS cost_usd, days_with_data,
       round(previous_cost, 2) AS previous_month_usd,
       CASE WHEN NOT is_partial AND NOT previous_partial THEN round(cost_usd - previous_cost, 2) END AS change_usd,
       CASE WHEN NOT is_partial AND NOT previous_partial THEN round(100 * (cost_usd - previous_cost) / nullif(previous_cost, 0), 1) END AS change_pct,
       is_partial, first_date, last_date
FROM marked;
COMMENT ON VIEW monthly_spend IS 'Spend per source and month with the change from the month before, in dollars and percent (none when either month is partial: is_partial)';
