-- Rollup rows a window replace will insert, update and delete, keyed by date, group_by and dimensions.
-- $1 = page glob, $2/$3 = window dates, $4 = source; $changed = whether a row differs outside the key
-- (date, group_by and dimensions), from the registry (storage/tables.ts).
WITH staged AS ({{sync/rollups_staged}}),
old AS (SELECT * FROM rollups_daily WHERE date BETWEEN $2::DATE AND $3::DATE AND source = $4)
SELECT
  count(*) FILTER (WHERE old.date IS NULL)    AS inserted,
  count(*) FILTER (WHERE staged.date IS NULL) AS deleted,
  count(*) FILTER (WHERE old.date IS NOT NULL AND staged.date IS NOT NULL
    AND $changed) AS updated
FROM old FULL OUTER JOIN staged
  ON old.date = staged.date AND old.group_by = staged.group_by
 AND old.provider_type IS NOT DISTINCT FROM staged.provider_type
 AND old.service IS NOT DISTINCT FROM staged.service
 AND old.category IS NOT DISTINCT FROM staged.category
