-- Month to date against the same days of last month, as of the last complete synced day no later than the report's
-- last date, all sources or one. $1 = source (NULL: all), $2 = the report's last date (NULL: none).
-- No change where any source's days are not all synced: `no_change_reason` says why (naming the source when there are several).
-- A total is NULL where any source's is (its days not all synced), never the other sources' part alone.
SELECT strftime(max(as_of), '%Y-%m-%d') AS as_of,
       CASE WHEN count(month_to_date_usd) = count(*) THEN round(sum(month_to_date_usd), 2) END AS month_to_date_usd,
       CASE WHEN count(same_days_last_month_usd) = count(*) THEN round(sum(same_days_last_month_usd), 2) END AS same_days_last_month_usd,
       CASE WHEN count(no_change_reason) = 0
            THEN round(100 * (sum(month_to_date_usd) - sum(same_days_last_month_usd)) / nullif(sum(same_days_last_month_usd), 0), 1) END AS change_pct,
       CASE WHEN count(*) = 1 THEN any_value(no_change_reason)
            ELSE string_agg(source || ': ' || no_change_reason, '; ' ORDER BY source) END AS no_change_reason
FROM (WITH as_of_cap AS (SELECT $2::DATE AS d), {{verify/month_to_date}}) WHERE ($1::VARCHAR IS NULL OR source = $1)
HAVING count(*) > 0
