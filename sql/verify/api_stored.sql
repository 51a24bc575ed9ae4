-- One source's stored rollups per date and group, and its line items' sums per date and provider, in a
-- date range, summed exactly (DECIMAL). $1 = source, $2/$3 = first and last date.
SELECT date::VARCHAR AS date, group_by, provider_type, service, category, sum(cost_usd::DECIMAL(38, 6))::VARCHAR AS usd
FROM rollups_daily WHERE source = $1 AND date BETWEEN $2::DATE AND $3::DATE GROUP BY ALL
UNION ALL
SELECT usage_date::VARCHAR, 'line_items', provider_type, NULL, NULL, sum(net_amount_usd::DECIMAL(38, 6))::VARCHAR
FROM line_items WHERE source = $1 AND usage_date BETWEEN $2::DATE AND $3::DATE GROUP BY ALL
