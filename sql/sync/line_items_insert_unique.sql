-- A window's spooled rows into the table, when no id was staged twice (no dedupe needed).
-- $1 = page glob, $2/$3 = window dates.
INSERT INTO line_items (id, usage_date, provider_type, provider_service, net_amount_usd, currency_original, project_id, user_email, extra)
SELECT * EXCLUDE (page, ord) FROM ({{sync/line_items_spooled}})
