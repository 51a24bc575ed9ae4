-- Months touching the period, with their change from the month before, all sources or one.
-- $1/$2 = first and last date, $3 = source (NULL: all).
WITH months AS (
  SELECT month, sum(cost_usd) AS cost_usd, max(days_with_data) AS days_with_data FROM monthly_spend WHERE ($3::VARCHAR IS NULL OR source = $3) GROUP BY month
)
SELECT strftime(month, '%Y-%m') AS month, round(cost_usd, 2) AS cost_usd,
       round(lag(cost_usd) OVER (ORDER BY month), 2) AS previous_month_usd,
       round(cost_usd - lag(cost_usd) OVER (ORDER BY month), 2) AS change_usd,
       round(100 * (cost_usd - lag(cost_usd) OVER (ORDER BY month)) / nullif(lag(cost_usd) OVER (ORDER BY month), 0), 1) AS change_pct,
       days_with_data
FROM months QUALIFY month BETWEEN date_trunc('month', $1::DATE) AND $2::DATE ORDER BY month
