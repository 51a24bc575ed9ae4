-- A lake table the current lake does not hold: its record (of another --out) no longer says anything true. $1 = table.
DELETE FROM _costsync_lake_tables WHERE table_name = $1
