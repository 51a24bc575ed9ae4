-- The latest pushes (push and push-otel), newest first, for `costsync status`. unanswered: requests a
-- stop cut before their answer (the next push sends their rows again); all_accepted counts answered ones.
-- delivered … unconfirmed: what became of the rows sent, as the push's summary says it (NULL for batches
-- an earlier costsync pushed, which recorded only the server's `skipped`). Rows not sent (delivered or
-- settled by an earlier push) are in no batch.
SELECT push_id, source, kind, connection_id, file, count(*) AS batches, sum(rows_sent) AS rows_sent,
       sum(cost_line_item_count) AS created,
       sum((outcome->>'delivered')::BIGINT) AS delivered,
       sum((outcome->>'refused')::BIGINT) AS refused,
       sum((outcome->>'not_applied')::BIGINT) AS not_applied,
       sum((outcome->>'settled')::BIGINT) AS settled,
       sum((outcome->>'unconfirmed')::BIGINT) AS unconfirmed,
       count(*) FILTER (WHERE response IS NULL) AS unanswered,
       bool_and(accepted) FILTER (WHERE response IS NOT NULL) AS all_accepted,
       strftime(max(sent_at), '%Y-%m-%dT%H:%M:%SZ') AS last_sent_at
FROM ingest_batches GROUP BY push_id, source, kind, connection_id, file
ORDER BY last_sent_at DESC LIMIT 5
