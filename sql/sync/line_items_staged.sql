-- Fragment: a window's spooled line items, one per id (the last page's copy wins).
-- $1 = the window's page glob, $2 and $3 = the window's first and last date.
SELECT * EXCLUDE (page, ord) FROM ({{sync/line_items_spooled}})
QUALIFY row_number() OVER (PARTITION BY id ORDER BY page DESC, ord DESC) = 1
