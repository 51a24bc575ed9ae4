-- A lake table's current metadata file after a commit. $1 = table, $2 = format, $3 = metadata file, $4 = snapshot id, $5 = when.
INSERT OR REPLACE INTO _costsync_lake_tables VALUES ($1, $2, $3, $4, $5)
