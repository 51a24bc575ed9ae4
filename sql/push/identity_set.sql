-- Records a connection's identity rule. $1 = ledger key, $2 = connection, $3 = source, $4 = rule, $5 = push id, $6 = time.
INSERT OR REPLACE INTO push_identity (ledger_key, connection_id, source, rule, push_id, recorded_at)
VALUES ($1, $2, $3, $4, $5, $6::TIMESTAMPTZ)
