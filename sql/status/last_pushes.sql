-- The latest pushes (push and push-otel), newest first, for `costsync status`. unanswered: requests a
-- stop cut before their answer (the next push sends their rows again); batches_accepted: the answered ones the
-- server accepted (a batch it accepted may still refuse rows: refused, not_applied).
-- delivered … unconfirmed: what became of the rows sent, as the push's summary says it (NULL for batches
-- an earlier costsync pushed, which recorded only the server's `skipped`). Rows not sent (delivered or
-- settled by an earlier push) are in no batch. `outcome` is read from the row as JSON: status opens a
-- warehouse read-only, and one an earlier costsync wrote has no such column (014_ingest_batch_outcome.sql).
WITH batches AS (SELECT *, json_extract(to_json(b), '$.outcome') AS counts FROM ingest_batches b)
SELECT push_id, source, kind, connection_id, file, count(*) AS batches, sum(rows_sent) AS rows_sent,
       sum(cost_line_item_count) AS created,
       sum((counts->>'delivered')::BIGINT) AS delivered,
       sum((counts->>'refused')::BIGINT) AS refused,
       sum((counts->>'not_applied')::BIGINT) AS not_applied,
       sum((counts->>'settled')::BIGINT) AS settled,
       sum((counts->>'unconfirmed')::BIGINT) AS unconfirmed,
       count(*) FILTER (WHERE response IS NULL) AS unanswered,
       count(*) FILTER (WHERE response IS NOT NULL AND accepted) AS batches_accepted,
       strftime(max(sent_at), '%Y-%m-%dT%H:%M:%SZ') AS last_sent_at
FROM batches GROUP BY push_id, source, kind, connection_id, file
ORDER BY last_sent_at DESC LIMIT 5
