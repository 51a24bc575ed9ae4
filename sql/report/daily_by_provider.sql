-- Daily spend per provider in the period, all sources or one. $1/$2 = first and last date, $3 = source (NULL: all).
SELECT strftime(date, '%Y-%m-%d') AS date, provider, round(sum(cost_usd), 2) AS cost_usd
FROM daily_spend_by_provider WHERE date BETWEEN $1::DATE AND $2::DATE AND ($3::VARCHAR IS NULL OR source = $3)
GROUP BY ALL ORDER BY date, provider
