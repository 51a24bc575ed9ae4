-- Partitions changed, numbered after every earlier change. $1 = tables, $2 = source, $3 = dates; both lists comma-separated.
INSERT INTO _costsync_partition_changes
SELECT t, $2, d::DATE, nextval('_costsync_change_seq')
FROM (SELECT unnest(string_split($1, ',')) AS t) CROSS JOIN (SELECT unnest(string_split($3, ',')) AS d)
