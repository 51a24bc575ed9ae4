-- Records the outcome of a request's rows. $1 = ledger key; $2 ids, $3 held (the values now delivered,
-- null to keep what was held), $4 pending (the values of a cut request, else null): JSON arrays of one
-- length; $5 = push id, $6 = time.
INSERT INTO push_rows (ledger_key, row_id, held_md5, pending_md5, push_id, updated_at)
SELECT $1, unnest(from_json($2::VARCHAR, '["VARCHAR"]')), unnest(from_json($3::VARCHAR, '["VARCHAR"]')),
       unnest(from_json($4::VARCHAR, '["VARCHAR"]')), $5, $6::TIMESTAMPTZ
ON CONFLICT (ledger_key, row_id) DO UPDATE SET
  held_md5 = coalesce(excluded.held_md5, push_rows.held_md5),
  pending_md5 = excluded.pending_md5,
  push_id = excluded.push_id,
  updated_at = excluded.updated_at
