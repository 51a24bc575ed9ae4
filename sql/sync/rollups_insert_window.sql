-- A window's spooled rollup rows into the table. $1 = page glob, $2/$3 = window dates.
INSERT INTO rollups_daily (date, group_by, provider_type, service, category, cost_usd, extra)
{{sync/rollups_staged}}
