-- Spend by provider over the synced days, from the daily rollups.
SELECT provider_type AS provider, round(sum(cost_usd), 2) AS spend_usd,
       min(date)::VARCHAR AS first_day, max(date)::VARCHAR AS last_day
FROM rollups_daily WHERE group_by = 'provider'
GROUP BY provider_type ORDER BY spend_usd DESC
