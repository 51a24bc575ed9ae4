-- Months touching the period, with their change from the month before, all sources or one.
-- A month is partial when the data does not cover it whole (in progress, or starting after the 1st):
-- its change, and the next month's, are left out. $1/$2 = first and last date, $3 = source (NULL: all).
WITH months AS (
  SELECT month, sum(cost_usd) AS cost_usd, max(days_with_data) AS days_with_data, min(first_date) AS first_date, max(last_date) AS last_date
  FROM monthly_spend WHERE ($3::VARCHAR IS NULL OR source = $3) GROUP BY month
), marked AS (
  SELECT *, first_date > month OR last_date < last_day(month) AS is_partial,
         lag(cost_usd) OVER (ORDER BY month) AS previous_cost,
         lag(first_date > month OR last_date < last_day(month)) OVER (ORDER BY month) AS previous_partial
  FROM months
)
SELECT strftime(month, '%Y-%m') AS month, round(cost_usd, 2) AS cost_usd,
       round(previous_cost, 2) AS previous_month_usd,
       CASE WHEN NOT is_partial AND NOT previous_partial THEN round(cost_usd - previous_cost, 2) END AS change_usd,
       CASE WHEN NOT is_partial AND NOT previous_partial THEN round(100 * (cost_usd - previous_cost) / nullif(previous_cost, 0), 1) END AS change_pct,
       days_with_data, is_partial, strftime(last_date, '%Y-%m-%d') AS last_date,
       max(month) OVER () = month AND is_partial AS to_date,
       -- The month in progress projected to its end at its pace so far (a run-rate), when its data starts on the 1st.
       CASE WHEN max(month) OVER () = month AND is_partial AND first_date = month
            THEN round(cost_usd / (date_diff('day', month, last_date) + 1) * day(last_day(month)), 2) END AS projected_usd
FROM marked QUALIFY month BETWEEN date_trunc('month', $1::DATE) AND $2::DATE ORDER BY month
