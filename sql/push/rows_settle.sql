-- Records corrections the server did not apply as settled (--settle-corrections): the user set the
-- difference right another way (an Adjustment row), so a later push of the same values counts them as
-- delivered. $1 = ledger key, $2 = ids, $3 = their values (JSON arrays), $4 = push id, $5 = time.
UPDATE push_rows SET settled_md5 = s.v, push_id = $4, updated_at = $5::TIMESTAMPTZ
FROM (SELECT unnest(from_json($2::VARCHAR, '["VARCHAR"]')) AS id, unnest(from_json($3::VARCHAR, '["VARCHAR"]')) AS v) s
WHERE push_rows.ledger_key = $1 AND push_rows.row_id = s.id
