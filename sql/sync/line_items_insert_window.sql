-- The window's staged rows, one per id (the last page's copy wins).
INSERT INTO line_items
SELECT id, usage_date, provider_type, provider_service, net_amount_usd, currency_original, project_id, user_email, extra
FROM _stage_line_items
WHERE window_start = $1::DATE
QUALIFY row_number() OVER (PARTITION BY id ORDER BY page DESC, ord DESC) = 1
