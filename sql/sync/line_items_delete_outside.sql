-- Full refresh: drop line items dated outside the synced range. $1/$2 = first and last date synced.
DELETE FROM line_items WHERE usage_date < $1::DATE OR usage_date > $2::DATE
