-- Rows a window replace will insert, update and delete: compares the table's rows in the window
-- with the deduplicated staged rows (the last page's copy of a duplicated id wins).
WITH staged AS (
  SELECT * FROM _stage_line_items WHERE window_start = $1::DATE
  QUALIFY row_number() OVER (PARTITION BY id ORDER BY page DESC, ord DESC) = 1
),
old AS (SELECT * FROM line_items WHERE usage_date BETWEEN $1::DATE AND $2::DATE)
SELECT
  count(*) FILTER (WHERE old.id IS NULL)                              AS inserted,
  count(*) FILTER (WHERE staged.id IS NULL)                           AS deleted,
  count(*) FILTER (WHERE old.id IS NOT NULL AND staged.id IS NOT NULL
    AND (old.usage_date, old.provider_type, old.provider_service, old.net_amount_usd, old.currency_original,
         old.project_id, old.user_email, old.extra::VARCHAR)
        IS DISTINCT FROM
        (staged.usage_date, staged.provider_type, staged.provider_service, staged.net_amount_usd,
         staged.currency_original, staged.project_id, staged.user_email, staged.extra::VARCHAR)) AS updated
FROM old FULL OUTER JOIN staged ON old.id = staged.id
