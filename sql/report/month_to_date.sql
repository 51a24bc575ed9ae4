-- Month to date against the same days of last month, as of the latest day with data.
SELECT strftime(as_of, '%Y-%m-%d') AS as_of, month_to_date_usd, same_days_last_month_usd, change_pct FROM month_to_date
