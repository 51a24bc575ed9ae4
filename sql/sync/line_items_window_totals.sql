-- A window's spooled line items (one per id) summed per date and provider, to check against the
-- provider rollup. $1 = the window's page glob, $2 and $3 = the window's first and last date.
SELECT strftime(usage_date, '%Y-%m-%d') AS date, coalesce(provider_type, '') AS key, sum(net_amount_usd) AS amount
FROM ({{sync/line_items_staged}})
GROUP BY ALL
