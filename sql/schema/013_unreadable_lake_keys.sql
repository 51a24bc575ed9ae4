-- Versions before this one recorded, for the lake tables with no month partition (anomalies and their
-- history), a pending date no version can read ('<table>/<source>/0NaN-NaN-01'): never cleared, it was
-- counted as pending by the outbox metric for ever. Those tables are compared whole at a lake's start now.
DELETE FROM _costsync_outbox WHERE kind = 'parquet' AND key LIKE '%/0NaN-NaN-01';
