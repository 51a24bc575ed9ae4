-- The report's period: $1/$2 as given, else the 90 days up to the last complete day (never ending before a --from
-- given alone): the `month_to_date` view's as_of, else the latest day with data before today (UTC), so no card
-- compares a day still being billed; only a warehouse with today's data alone ends on today. Without a --from, it
-- starts no earlier than the first day with data: days before it would read as days nothing was spent.
-- $3 = source (NULL: all).
WITH latest AS (
  SELECT coalesce(
           (SELECT max(as_of) FROM month_to_date WHERE ($3::VARCHAR IS NULL OR source = $3)),
           max(date) FILTER (WHERE date < (now() AT TIME ZONE 'UTC')::DATE),
           max(date)) AS last_day,
         min(date) AS first_day
  FROM daily_spend_by_provider WHERE ($3::VARCHAR IS NULL OR source = $3)
)
SELECT strftime(coalesce($1::DATE, greatest(coalesce($2::DATE, last_day) - 89, least(first_day, coalesce($2::DATE, last_day)))), '%Y-%m-%d') AS "from",
       strftime(coalesce($2::DATE, greatest(last_day, $1::DATE)), '%Y-%m-%d') AS "to"
FROM latest
