-- The ten services with the most spend in the period. $1/$2 = first and last date, $3 = source (NULL: all).
SELECT service, round(sum(cost_usd), 2) AS cost_usd
FROM daily_spend_by_service WHERE date BETWEEN $1::DATE AND $2::DATE AND ($3::VARCHAR IS NULL OR source = $3)
GROUP BY service ORDER BY cost_usd DESC, service LIMIT 10
