-- Which projects spend the most? Line-item spend per source and project.
CREATE OR REPLACE VIEW spend_by_project AS
SELECT source, project_id, round(sum(net_amount_usd), 2) AS cost_usd, count(*) AS line_items, min(usage_date) AS first_date, max(usage_date) AS last_date
FROM line_items GROUP BY source, project_id ORDER BY cost_usd DESC;
COMMENT ON VIEW spend_by_project IS 'Line-item spend per source and project, largest first';
