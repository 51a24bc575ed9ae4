-- The file rows of this push's requests that were sent but never answered (cut by a stop: response is NULL);
-- the server may hold them. $1 = push key, $2 = the key costsync 0.1 gave the same push.
SELECT first_row, last_row FROM ingest_batches WHERE push_key IN ($1, $2) AND response IS NULL ORDER BY first_row
