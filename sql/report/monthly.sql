-- Months touching the period, with their change from the month before, all sources or one.
-- A month is partial when a source's synced dates do not cover it whole (monthly_spend): its change, and
-- the next month's, are left out. It is "to date" only when it is the month of $4 (today) and every
-- source's days from its 1st to the day before $4 are synced; only then is a run-rate given, from those days
-- alone (today's is not over: the API is still adding to it).
-- $1/$2 = first and last date, $3 = source (NULL: all), $4 = today.
WITH months AS (
  SELECT month, sum(cost_usd) AS cost_usd, max(days_with_data) AS days_with_data, min(first_date) AS first_date, max(last_date) AS last_date,
         bool_or(is_partial) AS is_partial, min(synced_through) AS synced_through, count(synced_through) = count(*) AS from_first
  FROM monthly_spend WHERE ($3::VARCHAR IS NULL OR source = $3) GROUP BY month
), before_today AS (
  SELECT sum(cost_usd) AS cost_usd FROM daily_spend_by_provider
  WHERE date >= date_trunc('month', $4::DATE) AND date < $4::DATE AND ($3::VARCHAR IS NULL OR source = $3)
), marked AS (
  SELECT *, lag(cost_usd) OVER (ORDER BY month) AS previous_cost, lag(is_partial) OVER (ORDER BY month) AS previous_partial,
         lag(month) OVER (ORDER BY month) = month - INTERVAL 1 MONTH AS follows,
         month = date_trunc('month', $4::DATE) AND is_partial AND from_first AND synced_through >= $4::DATE - INTERVAL 1 DAY AS to_date
  FROM months
)
SELECT strftime(month, '%Y-%m') AS month, round(cost_usd, 2) AS cost_usd,
       CASE WHEN follows THEN round(previous_cost, 2) END AS previous_month_usd,
       CASE WHEN NOT is_partial AND NOT previous_partial AND follows THEN round(cost_usd - previous_cost, 2) END AS change_usd,
       CASE WHEN NOT is_partial AND NOT previous_partial AND follows THEN round(100 * (cost_usd - previous_cost) / nullif(previous_cost, 0), 1) END AS change_pct,
       days_with_data, is_partial, strftime(last_date, '%Y-%m-%d') AS last_date, coalesce(to_date, false) AS to_date,
       -- The month in progress projected to its end at its pace over its whole days so far (a run-rate; none on the 1st).
       CASE WHEN to_date THEN round((SELECT cost_usd FROM before_today) / nullif(day($4::DATE) - 1, 0) * day(last_day(month)), 2) END AS projected_usd
FROM marked WHERE month BETWEEN date_trunc('month', $1::DATE) AND $2::DATE ORDER BY month
