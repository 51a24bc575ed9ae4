-- Records a derived output as pending (idempotent). $1 = kind, $2 = key.
INSERT INTO _costsync_outbox VALUES ($1, $2, now()) ON CONFLICT DO NOTHING
