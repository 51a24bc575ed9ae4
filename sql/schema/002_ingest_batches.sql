-- The push ledger: one row per ingest request costsync sent and the server answered.

CREATE TABLE IF NOT EXISTS ingest_batches (
  push_id              VARCHAR NOT NULL,   -- one `costsync push` (or push-otel) run
  push_key             VARCHAR NOT NULL,   -- same file content, mapping, connection and source: same key; resume matches on it
  kind                 VARCHAR NOT NULL,   -- focus or otel
  connection_id        VARCHAR,
  file                 VARCHAR NOT NULL,
  file_sha256          VARCHAR NOT NULL,
  first_row            BIGINT,             -- data rows of the file (1 = the first row after a CSV header)
  last_row             BIGINT,
  rows_sent            INTEGER,
  batch_id             VARCHAR,
  accepted             BOOLEAN,
  row_count            INTEGER,
  cost_line_item_count INTEGER,
  skipped              INTEGER,
  errors               JSON,               -- as the server returned them
  response             JSON,               -- the whole result, fields the spec does not list included
  sent_at              TIMESTAMPTZ NOT NULL
);
