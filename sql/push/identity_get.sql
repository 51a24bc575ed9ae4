-- A connection's identity rule; whether an earlier costsync pushed to it without one (its rows then
-- carry content ids); and how many rows the ledger shows delivered under the rule. $1 = ledger key,
-- $2 = connection id, $3 = source.
SELECT (SELECT rule FROM push_identity WHERE ledger_key = $1) AS rule,
       (SELECT count(*) FROM ingest_batches
         WHERE kind = 'focus' AND connection_id = $2 AND coalesce(source, 'default') = $3 AND rows_recorded IS NOT TRUE) AS earlier_batches,
       (SELECT count(*) FROM push_rows WHERE ledger_key = $1 AND held_md5 IS NOT NULL) AS delivered_rows
