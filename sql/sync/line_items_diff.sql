-- Rows a window replace will insert, update and delete: the table's rows in the window against
-- the spooled ones. $1 = page glob, $2/$3 = window dates, $4 = source; $changed = whether a row differs
-- outside the key (id), from the registry (storage/tables.ts).
WITH staged AS ({{sync/line_items_staged}}),
old AS (SELECT * FROM line_items WHERE usage_date BETWEEN $2::DATE AND $3::DATE AND source = $4)
SELECT
  count(*) FILTER (WHERE old.id IS NULL)    AS inserted,
  count(*) FILTER (WHERE staged.id IS NULL) AS deleted,
  count(*) FILTER (WHERE old.id IS NOT NULL AND staged.id IS NOT NULL AND $changed) AS updated
FROM old FULL OUTER JOIN staged ON old.id = staged.id
