-- Month to date against the same days of last month, as of the latest day with data, all sources or one. $1 = source (NULL: all).
SELECT strftime(max(as_of), '%Y-%m-%d') AS as_of, round(sum(month_to_date_usd), 2) AS month_to_date_usd,
       round(sum(same_days_last_month_usd), 2) AS same_days_last_month_usd,
       round(100 * (sum(month_to_date_usd) - sum(same_days_last_month_usd)) / nullif(sum(same_days_last_month_usd), 0), 1) AS change_pct
FROM month_to_date WHERE ($1::VARCHAR IS NULL OR source = $1)
HAVING count(*) > 0
