-- A window's spooled rollup rows into the table. $1 = page glob, $2/$3 = window dates, $4 = source.
INSERT INTO rollups_daily (date, group_by, provider_type, service, category, cost_usd, extra, source)
SELECT *, $4 FROM ({{sync/rollups_staged}})
