-- Rows and invalid rows of a file, counted in parallel (no row order needed): most files have no
-- problem, and then the ordered pass that finds their lines is skipped. {validation} = validate.sql.
SELECT count(*) AS rows, count(_problems) AS invalid FROM ({validation})
