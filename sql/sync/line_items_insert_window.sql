-- A window's spooled rows into the table. $1 = page glob, $2/$3 = window dates, $4 = source.
INSERT INTO line_items (id, usage_date, provider_type, provider_service, net_amount_usd, currency_original, project_id, user_email, extra, source)
SELECT *, $4 FROM ({{sync/line_items_staged}})
