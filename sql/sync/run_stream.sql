INSERT INTO sync_run_streams (run_id, stream, rows_inserted, rows_updated, rows_deleted, pages, requests, retries, rate_limited, warnings, refetches, source, responses, older_changed, older_synced)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::JSON, $11, $12, $13::JSON, $14, $15)
