-- The period's total and daily average, and its last n days against the n before, n = min(7, the period's days),
-- so a short period compares only its own last days (the n before may lie before the period: they are named).
-- ($1/$2 are '' when the warehouse holds no spend at all.) No change (NULL, with no_change_reason) where one of the 2n days has no data. $1/$2 = first and last date, $3 = source (NULL: all).
WITH daily AS (
  SELECT date, sum(cost_usd) AS usd FROM daily_spend_by_provider WHERE ($3::VARCHAR IS NULL OR source = $3) GROUP BY date
), win AS (
  SELECT coalesce(least(7, date_diff('day', nullif($1, '')::DATE, nullif($2, '')::DATE) + 1), 7)::INTEGER AS n
), spans AS (
  SELECT n, (nullif($2, '')::DATE - to_days(n - 1))::DATE AS recent_from, nullif($2, '')::DATE AS recent_to,
         (nullif($2, '')::DATE - to_days(2 * n - 1))::DATE AS before_from, (nullif($2, '')::DATE - to_days(n))::DATE AS before_to
  FROM win
), sums AS (
  SELECT s.*,
         (SELECT sum(usd) FROM daily WHERE date BETWEEN s.recent_from AND s.recent_to) AS recent_usd,
         (SELECT count(*) FROM daily WHERE date BETWEEN s.recent_from AND s.recent_to) AS recent_with_data,
         (SELECT sum(usd) FROM daily WHERE date BETWEEN s.before_from AND s.before_to) AS before_usd,
         (SELECT count(*) FROM daily WHERE date BETWEEN s.before_from AND s.before_to) AS before_with_data
  FROM spans s
), reasoned AS (
  SELECT *,
         CASE WHEN recent_from IS NULL THEN 'the warehouse holds no spend yet'
              WHEN recent_with_data < n THEN format('{} of the {} days {}..{} have data', recent_with_data, n, recent_from, recent_to)
              WHEN before_with_data < n THEN format('{} of the {} days {}..{} before them have data', before_with_data, n, before_from, before_to)
              WHEN before_usd = 0 THEN format('no spend on the {} days before them', n) END AS no_change_reason
  FROM sums
), period AS (
  SELECT round(sum(usd), 2) AS total_usd, count(*)::INTEGER AS days, round(avg(usd), 2) AS daily_average_usd
  FROM daily WHERE date BETWEEN nullif($1, '')::DATE AND nullif($2, '')::DATE
)
SELECT p.*, r.n AS recent_days, strftime(r.recent_from, '%Y-%m-%d') AS recent_from, strftime(r.recent_to, '%Y-%m-%d') AS recent_to,
       strftime(r.before_from, '%Y-%m-%d') AS before_from, strftime(r.before_to, '%Y-%m-%d') AS before_to,
       round(r.recent_usd, 2) AS recent_usd, round(r.before_usd, 2) AS before_usd,
       CASE WHEN r.no_change_reason IS NULL THEN round(100 * (r.recent_usd - r.before_usd) / r.before_usd, 1) END AS change_pct,
       r.no_change_reason
FROM period p, reasoned r
