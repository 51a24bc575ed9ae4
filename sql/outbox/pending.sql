-- Pending derived outputs of one kind, oldest key first. $1 = kind.
SELECT key FROM _costsync_outbox WHERE kind = $1 ORDER BY key
