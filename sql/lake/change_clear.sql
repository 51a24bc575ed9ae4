-- Partitions changed: their earlier changes are superseded. $1 = tables, $2 = source, $3 = dates; both lists comma-separated.
DELETE FROM _costsync_partition_changes
WHERE source = $2 AND tbl IN (SELECT unnest(string_split($1, ','))) AND date IN (SELECT unnest(string_split($3, ','))::DATE)
