-- Derived outputs still pending, per output: lake partitions, commits and run tables ($1, the stored
-- kinds counted for the lake), manifests ($2), the published warehouse (the outbox), and notifications
-- not yet sent. Every output has a row, zero when nothing waits, so a night whose outputs fell behind
-- shows on a dashboard as a non-zero figure.
WITH outputs(output, kinds) AS (VALUES ('lake', string_split($1, ',')), ('manifest', string_split($2, ',')), ('publish', ['publish']))
SELECT o.output, (SELECT count(*) FROM _costsync_outbox b WHERE list_contains(o.kinds, b.kind)) AS n FROM outputs o
UNION ALL
SELECT 'notify', count(*) FROM _costsync_notifications WHERE sent_at IS NULL
ORDER BY 1
