-- Each source's latest day with data, and that day's spend per provider.
WITH latest AS (SELECT source, max(date) AS day FROM daily_spend_by_provider GROUP BY source)
SELECT d.source, d.provider, epoch(latest.day::TIMESTAMP) AS day_s, d.cost_usd
FROM daily_spend_by_provider d JOIN latest ON latest.source = d.source AND latest.day = d.date
ORDER BY d.source, d.provider
