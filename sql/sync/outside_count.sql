-- Full refresh: a source's rows of $table dated (by $date) outside the synced range, and their dates.
-- $1/$2 = first and last date synced, $3 = source.
SELECT count(*) AS n, coalesce(list(DISTINCT strftime($date, '%Y-%m-%d')), []) AS dates
FROM $table WHERE ($date < $1::DATE OR $date > $2::DATE) AND source = $3
