-- A window's spooled rows into the table, when no id was staged twice (no dedupe needed).
-- $1 = page glob, $2/$3 = window dates, $4 = source; $fields = the stored columns before source (storage/tables.ts).
INSERT INTO line_items ($fields, source)
SELECT * EXCLUDE (page, ord), $4 FROM ({{sync/line_items_spooled}})
