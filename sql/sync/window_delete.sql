-- A window's rows of a windowed table ($table, dated by $date), before its replace. $1/$2 = window dates, $3 = source.
DELETE FROM $table WHERE $date BETWEEN $1::DATE AND $2::DATE AND source = $3
