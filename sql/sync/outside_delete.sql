-- Full refresh: drop a source's rows of $table dated (by $date) outside the synced range. $1/$2 = first and last date synced, $3 = source.
DELETE FROM $table WHERE ($date < $1::DATE OR $date > $2::DATE) AND source = $3
