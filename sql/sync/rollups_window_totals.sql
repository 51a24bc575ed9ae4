-- A window's spooled rollups summed per date and group_by, to check that the three views agree.
-- $1 = the window's page glob, $2 and $3 = the window's first and last date.
SELECT strftime(date, '%Y-%m-%d') AS date, group_by AS key, sum(cost_usd) AS amount
FROM ({{sync/rollups_staged}})
GROUP BY ALL
