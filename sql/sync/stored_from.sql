-- The first date of $table (by $date) a source holds, or null. $1 = source.
SELECT min($date)::VARCHAR AS first FROM $table WHERE source = $1
