-- Line items the warehouse holds per date of a range, for the progress estimate. $1/$2 = first and last date, $3 = source.
SELECT strftime(usage_date, '%Y-%m-%d') AS date, count(*) AS n FROM line_items
WHERE usage_date BETWEEN $1::DATE AND $2::DATE AND source = $3 GROUP BY ALL
