-- Each synced range of every source and stream (synced_dates), with how many of its days fall in $1..$2
-- (NULL: open), for verify to tell "no differences" from "nothing there to compare".
WITH {{verify/covered}}
SELECT source, stream, strftime(from_date, '%Y-%m-%d') AS from_date, strftime(to_date, '%Y-%m-%d') AS to_date,
       greatest(0, date_diff('day', greatest(from_date, coalesce($1::DATE, from_date)), least(to_date, coalesce($2::DATE, to_date))) + 1)::INTEGER AS days_in_range
FROM synced_dates
ORDER BY source, stream, from_date
