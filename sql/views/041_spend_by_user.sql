-- Who spends the most? Line-item spend per source and user.
CREATE OR REPLACE VIEW spend_by_user AS
SELECT source, user_email, round(sum(net_amount_usd), 2) AS cost_usd, count(*) AS line_items, count(DISTINCT project_id) AS projects, max(usage_date) AS last_date
FROM line_items GROUP BY source, user_email ORDER BY cost_usd DESC;
COMMENT ON VIEW spend_by_user IS 'Line-item spend per source and user, largest first';
