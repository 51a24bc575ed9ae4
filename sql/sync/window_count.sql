-- Rows a windowed table ($table, dated by $date) holds in a window. $1/$2 = window dates, $3 = source.
SELECT count(*) AS n FROM $table WHERE $date BETWEEN $1::DATE AND $2::DATE AND source = $3
