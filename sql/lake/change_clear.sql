-- A partition changed: its earlier change is superseded. $1 = table, $2 = source, $3 = dates, comma-separated.
DELETE FROM _costsync_partition_changes WHERE tbl = $1 AND source = $2 AND date IN (SELECT unnest(string_split($3, ','))::DATE)
