-- Rows a window replace will insert, update and delete: the table's rows in the window against
-- the spooled ones. $1 = page glob, $2/$3 = window dates, $4 = source.
WITH staged AS ({{sync/line_items_staged}}),
old AS (SELECT * FROM line_items WHERE usage_date BETWEEN $2::DATE AND $3::DATE AND source = $4)
SELECT
  count(*) FILTER (WHERE old.id IS NULL)    AS inserted,
  count(*) FILTER (WHERE staged.id IS NULL) AS deleted,
  count(*) FILTER (WHERE old.id IS NOT NULL AND staged.id IS NOT NULL
    AND (old.usage_date, old.provider_type, old.provider_service, old.net_amount_usd, old.currency_original,
         old.project_id, old.user_email, old.extra::VARCHAR)
        IS DISTINCT FROM
        (staged.usage_date, staged.provider_type, staged.provider_service, staged.net_amount_usd,
         staged.currency_original, staged.project_id, staged.user_email, staged.extra::VARCHAR)) AS updated
FROM old FULL OUTER JOIN staged ON old.id = staged.id
