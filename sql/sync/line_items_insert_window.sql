-- A window's spooled rows into the table. $1 = page glob, $2/$3 = window dates, $4 = source;
-- $fields = the stored columns before source, from the registry (storage/tables.ts).
INSERT INTO line_items ($fields, source)
SELECT *, $4 FROM ({{sync/line_items_staged}})
