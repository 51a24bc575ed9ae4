-- Rows the table holds in a window. $1/$2 = window dates, $3 = source.
SELECT count(*) AS n FROM rollups_daily WHERE date BETWEEN $1::DATE AND $2::DATE AND source = $3
