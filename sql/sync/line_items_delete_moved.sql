-- Line items new to a window that are stored at another date (the API moved their usage date): deleted
-- there, so a source stores each id once. Runs before the window's replace.
-- $1 = page glob, $2/$3 = window dates, $4 = source. Returns the dates they left.
DELETE FROM line_items
WHERE source = $4 AND usage_date NOT BETWEEN $2::DATE AND $3::DATE
  AND id IN (
    SELECT id FROM ({{sync/line_items_spooled}})
    EXCEPT SELECT id FROM line_items WHERE source = $4 AND usage_date BETWEEN $2::DATE AND $3::DATE
  )
RETURNING usage_date::VARCHAR AS date
