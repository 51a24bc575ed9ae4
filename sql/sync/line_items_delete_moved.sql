-- Line items new to a window that are stored at another date (the API moved their usage date): deleted
-- there, so a source stores each id once. Runs before the window's replace, with the diff's join shape.
-- $1 = page glob, $2/$3 = window dates, $4 = source. Returns the dates they left.
DELETE FROM line_items
WHERE source = $4 AND usage_date NOT BETWEEN $2::DATE AND $3::DATE
  AND id IN (
    SELECT staged.id FROM ({{sync/line_items_staged}}) AS staged
    ANTI JOIN (SELECT id FROM line_items WHERE usage_date BETWEEN $2::DATE AND $3::DATE AND source = $4) AS old ON old.id = staged.id
  )
RETURNING usage_date::VARCHAR AS date
