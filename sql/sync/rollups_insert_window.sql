-- A window's spooled rollup rows into the table. $1 = page glob, $2/$3 = window dates, $4 = source;
-- $fields = the stored columns before source, from the registry (storage/tables.ts).
INSERT INTO rollups_daily ($fields, source)
SELECT *, $4 FROM ({{sync/rollups_staged}})
