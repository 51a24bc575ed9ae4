-- Records many derived outputs of one kind as pending (idempotent). $1 = kind, $2 = keys, one a line.
INSERT INTO _costsync_outbox
SELECT DISTINCT $1, k, now() FROM (SELECT unnest(string_split($2, chr(10))) AS k)
WHERE k <> '' AND NOT EXISTS (SELECT 1 FROM _costsync_outbox o WHERE o.kind = $1 AND o.key = k)
