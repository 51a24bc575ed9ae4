-- The report's period: $1/$2 as given, else the 90 days up to the latest day with data (never ending before a --from
-- given alone). $3 = source (NULL: all).
WITH latest AS (SELECT max(date) AS last_day FROM daily_spend_by_provider WHERE ($3::VARCHAR IS NULL OR source = $3))
SELECT strftime(coalesce($1::DATE, coalesce($2::DATE, last_day) - INTERVAL 89 DAYS), '%Y-%m-%d') AS "from",
       strftime(coalesce($2::DATE, greatest(last_day, $1::DATE)), '%Y-%m-%d') AS "to"
FROM latest
