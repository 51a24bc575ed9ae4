-- Full refresh: drop rollup rows dated outside the synced range. $1/$2 = first and last date synced.
DELETE FROM rollups_daily WHERE date < $1::DATE OR date > $2::DATE
