-- Rows the table holds in a window. $1/$2 = window dates, $3 = source.
SELECT count(*) AS n FROM line_items WHERE usage_date BETWEEN $1::DATE AND $2::DATE AND source = $3
