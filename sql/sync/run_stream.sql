INSERT INTO sync_run_streams VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::JSON)
