DELETE FROM rollups_daily WHERE date BETWEEN $1::DATE AND $2::DATE AND source = $3
