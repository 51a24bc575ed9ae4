-- The ten largest movers over the dates of the report's card (totals.sql): the period's last n days against the n before,
-- n = min(7, the period's days). $1/$2 = first and last date, $3 = source (NULL: all).
WITH win AS (
  SELECT least(7, date_diff('day', nullif($1, '')::DATE, nullif($2, '')::DATE) + 1)::INTEGER AS n
), spans AS (
  SELECT (nullif($2, '')::DATE - to_days(n - 1))::DATE AS recent_from, (nullif($2, '')::DATE - to_days(2 * n - 1))::DATE AS before_from,
         (nullif($2, '')::DATE - to_days(n))::DATE AS before_to
  FROM win
), windows AS (
  SELECT service,
         coalesce(sum(cost_usd) FILTER (WHERE date >= recent_from), 0) AS recent_usd,
         coalesce(sum(cost_usd) FILTER (WHERE date <= before_to), 0) AS before_usd
  FROM daily_spend_by_service, spans
  WHERE date BETWEEN before_from AND nullif($2, '')::DATE AND ($3::VARCHAR IS NULL OR source = $3)
  GROUP BY service
)
SELECT service, round(recent_usd, 2) AS recent_usd, round(before_usd, 2) AS before_usd,
       round(recent_usd - before_usd, 2) AS change_usd,
       round(100 * (recent_usd - before_usd) / nullif(before_usd, 0), 1) AS change_pct
FROM windows ORDER BY abs(recent_usd - before_usd) DESC, service LIMIT 10
