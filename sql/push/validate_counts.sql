-- Rows and invalid rows of a file, counted in parallel (no row order needed): most files have no
-- problem, and then the ordered pass that finds their lines is skipped. {validation} = validate.sql.
-- off_midnight: valid rows whose charge period has a time of day the dates sent do not keep.
-- repeated: valid rows whose id (their own, or their key's; by its hash) another valid row of the file has too.
SELECT count(*) AS rows, count(_problems) AS invalid, count(_off_midnight) FILTER (WHERE _problems IS NULL) AS off_midnight,
       count(_row_hash) FILTER (WHERE _problems IS NULL) - count(DISTINCT _row_hash) FILTER (WHERE _problems IS NULL) AS repeated
FROM ({validation})
