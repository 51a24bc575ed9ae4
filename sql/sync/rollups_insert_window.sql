INSERT INTO rollups_daily
SELECT date, group_by, provider_type, service, category, cost_usd, extra
FROM _stage_rollups_daily
WHERE window_start = $1::DATE
QUALIFY row_number() OVER (PARTITION BY date, group_by, provider_type, service, category ORDER BY page DESC, ord DESC) = 1
ORDER BY date, group_by, provider_type, service, category
