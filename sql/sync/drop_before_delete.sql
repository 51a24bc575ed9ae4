-- --drop-before: deletes a source's rows of $table dated (by $date) before $1. $2 = source.
DELETE FROM $table WHERE $date < $1::DATE AND source = $2
