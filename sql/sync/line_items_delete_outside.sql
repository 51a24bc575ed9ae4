-- Full refresh: drop a source's line items dated outside the synced range. $1/$2 = first and last date synced, $3 = source.
DELETE FROM line_items WHERE (usage_date < $1::DATE OR usage_date > $2::DATE) AND source = $3
