-- What became of each answered request's rows, by costsync's reading of the answer, in the words of the
-- push's summary: {"delivered":n,"refused":n,"not_applied":n,"settled":n,"unconfirmed":n}. The server's
-- own `skipped` counts rows it held and rows it refused alike. NULL: a request without an answer, an
-- OTel document, or a batch pushed by an earlier costsync.
ALTER TABLE ingest_batches ADD COLUMN IF NOT EXISTS outcome JSON;
