-- What the ledger holds of some row ids of one connection. $1 = ledger key, $2 = the ids (a JSON array of strings).
SELECT row_id, held_md5, pending_md5, settled_md5 FROM push_rows
WHERE ledger_key = $1 AND row_id IN (SELECT unnest(from_json($2::VARCHAR, '["VARCHAR"]')))
