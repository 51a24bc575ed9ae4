-- The sources the warehouse holds anything of (spend, anomalies or a sync's state), for `report --source`.
SELECT source FROM (
  SELECT DISTINCT source FROM line_items UNION SELECT DISTINCT source FROM rollups_daily
  UNION SELECT DISTINCT source FROM anomalies UNION SELECT source FROM _costsync_sync_state
) ORDER BY source
