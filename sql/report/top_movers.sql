-- The ten largest movers: last 7 days of data against the 7 before (the view is as of the latest day with data).
SELECT service, last_7_days_usd, prior_7_days_usd, change_usd, change_pct FROM top_movers LIMIT 10
