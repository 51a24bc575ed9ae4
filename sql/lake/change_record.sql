-- A partition changed, numbered after every earlier change. $1 = table, $2 = source, $3 = dates, comma-separated.
INSERT INTO _costsync_partition_changes SELECT $1, $2, d::DATE, nextval('_costsync_change_seq') FROM (SELECT unnest(string_split($3, ',')) AS d)
