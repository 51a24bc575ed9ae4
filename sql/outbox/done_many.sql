-- Many derived outputs of one kind are in place. $1 = kind, $2 = keys, one a line.
DELETE FROM _costsync_outbox WHERE kind = $1 AND key IN (SELECT unnest(string_split($2, chr(10))))
