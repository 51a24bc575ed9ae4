-- The push ledger's rows: what the server holds of each line-item id costsync pushed, by the values'
-- hash, per connection (`ledger_key`: base URL, source, connection and vendor word). A row pushed
-- again with the same values is already delivered; with other values, a correction.
CREATE TABLE IF NOT EXISTS push_rows (
  ledger_key  VARCHAR NOT NULL,
  row_id      VARCHAR NOT NULL,      -- the x_<vendor>_line_item_id sent
  held_md5    VARCHAR,               -- the values the server holds as far as the ledger knows (NULL: none delivered)
  pending_md5 VARCHAR,               -- the values of a request cut before its answer (NULL: none)
  settled_md5 VARCHAR,               -- values of a correction the server did not apply, settled by the user (--settle-corrections)
  push_id     VARCHAR NOT NULL,      -- the push that last changed the row
  updated_at  TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (ledger_key, row_id)
);

-- The identity rule of each connection: what identifies a row without an id of its own.
CREATE TABLE IF NOT EXISTS push_identity (
  ledger_key  VARCHAR PRIMARY KEY,
  connection_id VARCHAR NOT NULL,
  source      VARCHAR NOT NULL,
  rule        VARCHAR NOT NULL,      -- {"kind":"key","columns":[…]} or {"kind":"content"}
  push_id     VARCHAR NOT NULL,
  recorded_at TIMESTAMPTZ NOT NULL
);

-- Batches whose rows are in push_rows; a batch of an earlier costsync (NULL) is resumed by its row range.
ALTER TABLE ingest_batches ADD COLUMN IF NOT EXISTS rows_recorded BOOLEAN;
