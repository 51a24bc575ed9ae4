-- Every pending output of one kind is in place (the published warehouse: due, or uploading). $1 = kind.
DELETE FROM _costsync_outbox WHERE kind = $1
