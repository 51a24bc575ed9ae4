-- Spend per source in the period (shown when there is more than one). $1/$2 = first and last date, $3 = source (NULL: all).
SELECT source, round(sum(cost_usd), 2) AS cost_usd, count(DISTINCT date) AS days
FROM daily_spend_by_provider WHERE date BETWEEN $1::DATE AND $2::DATE AND ($3::VARCHAR IS NULL OR source = $3)
GROUP BY source ORDER BY cost_usd DESC, source
