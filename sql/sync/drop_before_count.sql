-- --drop-before: a source's rows of $table dated (by $date) before $1, and their dates. $2 = source.
SELECT count(*) AS n, coalesce(list(DISTINCT strftime($date, '%Y-%m-%d')), []) AS dates
FROM $table WHERE $date < $1::DATE AND source = $2
