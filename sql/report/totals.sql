-- The period's total, daily average, and its last 7 days against the 7 before. $1/$2 = first and last date, $3 = source (NULL: all).
WITH daily AS (SELECT date, sum(cost_usd) AS usd FROM daily_spend_by_provider WHERE date BETWEEN $1::DATE AND $2::DATE AND ($3::VARCHAR IS NULL OR source = $3) GROUP BY date)
SELECT round(sum(usd), 2) AS total_usd, count(*) AS days, round(avg(usd), 2) AS daily_average_usd,
       round(sum(usd) FILTER (WHERE date > $2::DATE - INTERVAL 7 DAYS), 2) AS last_7_days_usd,
       round(sum(usd) FILTER (WHERE date <= $2::DATE - INTERVAL 7 DAYS AND date > $2::DATE - INTERVAL 14 DAYS), 2) AS prior_7_days_usd
FROM daily
