-- The ten largest movers: last 7 days of data against the 7 before (the view is as of the latest day with data). $1 = source (NULL: all).
SELECT service, round(sum(last_7_days_usd), 2) AS last_7_days_usd, round(sum(prior_7_days_usd), 2) AS prior_7_days_usd,
       round(sum(change_usd), 2) AS change_usd,
       round(100 * sum(change_usd) / nullif(sum(prior_7_days_usd), 0), 1) AS change_pct
FROM top_movers WHERE ($1::VARCHAR IS NULL OR source = $1)
GROUP BY service ORDER BY abs(sum(change_usd)) DESC, service LIMIT 10
