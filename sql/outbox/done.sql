-- A derived output is in place. $1 = kind, $2 = key.
DELETE FROM _costsync_outbox WHERE kind = $1 AND key = $2
