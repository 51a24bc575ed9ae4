-- Records one ingest request: answered, or (batch_id, accepted, the counts, errors, response and outcome
-- NULL) sent and cut by a stop before its answer, its outcome unknown. $18 = source, $19 = whether its rows
-- are in push_rows, $20 = what became of its rows (014_ingest_batch_outcome.sql).
INSERT INTO ingest_batches (push_id, push_key, kind, connection_id, file, file_sha256, first_row, last_row, rows_sent, batch_id,
                            accepted, row_count, cost_line_item_count, skipped, errors, response, sent_at, source, rows_recorded,
                            outcome)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15::JSON, $16::JSON, $17::TIMESTAMPTZ, $18, $19, $20::JSON)
