-- Full refresh: line items dated outside the synced range. $1/$2 = first and last date synced.
SELECT count(*) AS n FROM line_items WHERE usage_date < $1::DATE OR usage_date > $2::DATE
