-- Full refresh: a source's line items dated outside the synced range, and their dates.
-- $1/$2 = first and last date synced, $3 = source.
SELECT count(*) AS n, coalesce(list(DISTINCT strftime(usage_date, '%Y-%m-%d')), []) AS dates
FROM line_items WHERE (usage_date < $1::DATE OR usage_date > $2::DATE) AND source = $3
