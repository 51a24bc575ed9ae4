-- Rows and invalid rows of a file, counted in parallel (no row order needed): most files have no
-- problem, and then the ordered pass that finds their lines is skipped. {validation} = validate.sql.
-- off_midnight: valid rows whose charge period has a time of day the dates sent do not keep.
SELECT count(*) AS rows, count(_problems) AS invalid, count(_off_midnight) FILTER (WHERE _problems IS NULL) AS off_midnight
FROM ({validation})
