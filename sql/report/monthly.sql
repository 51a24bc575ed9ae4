-- Months touching the period, with their change from the month before. $1/$2 = first and last date.
SELECT strftime(month, '%Y-%m') AS month, cost_usd, previous_month_usd, change_usd, change_pct, days_with_data
FROM monthly_spend WHERE month BETWEEN date_trunc('month', $1::DATE) AND $2::DATE ORDER BY month
