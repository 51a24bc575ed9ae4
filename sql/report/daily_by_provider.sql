-- Daily spend per provider in the period. $1/$2 = first and last date.
SELECT strftime(date, '%Y-%m-%d') AS date, provider, cost_usd
FROM daily_spend_by_provider WHERE date BETWEEN $1::DATE AND $2::DATE ORDER BY date, provider
