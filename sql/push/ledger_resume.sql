-- The last file row a push with this key already had answered (0 when none), and its answered requests,
-- among batches without their rows in push_rows (an earlier costsync's, and push-otel's): those go on
-- by row range. A request cut by a stop is recorded with a NULL response: not answered, so sent again.
-- $1 = push key, $2 = the key costsync 0.1 gave the same push.
SELECT coalesce(max(last_row), 0) AS last_row, count(*) AS batches
FROM ingest_batches WHERE push_key IN ($1, $2) AND response IS NOT NULL AND rows_recorded IS NOT TRUE
