-- Month to date against the same days of last month, per source: the `month_to_date` view's query, shared with the
-- report's card. The includer defines `as_of_cap(d)`: the latest day d may be (NULL: no cap beyond the last complete synced day).
{{verify/covered}}, daily AS (
  SELECT source, date, sum(cost_usd) AS cost_usd FROM daily_spend_by_provider GROUP BY ALL
), synced AS (
  SELECT DISTINCT covered_source AS source, unnest(generate_series(c.r['from'], c.r['to'], INTERVAL 1 DAY))::DATE AS date
  FROM covered c WHERE c.r['from'] IS NOT NULL AND c.r['to'] IS NOT NULL
  UNION SELECT source, date FROM daily
), last_run AS (
  SELECT source, (max(started_at) AT TIME ZONE 'UTC')::DATE AS run_day FROM sync_runs GROUP BY source
), latest AS (
  SELECT s.source, max(s.date) AS as_of FROM synced s LEFT JOIN last_run l USING (source)
  WHERE s.date < (now() AT TIME ZONE 'UTC')::DATE AND (l.run_day IS NULL OR s.date < l.run_day)
    AND s.source IN (SELECT source FROM daily) AND s.date <= coalesce((SELECT d FROM as_of_cap), s.date)
  GROUP BY s.source
), spans AS (
  SELECT source, as_of, date_trunc('month', as_of)::DATE AS month_start,
         (date_trunc('month', as_of) - INTERVAL 1 MONTH)::DATE AS previous_start, (as_of - INTERVAL 1 MONTH)::DATE AS previous_end
  FROM latest
), counted AS (
  SELECT p.*,
         (SELECT count(*) FROM synced s WHERE s.source = p.source AND s.date BETWEEN p.month_start AND p.as_of) AS month_synced,
         (SELECT count(*) FROM synced s WHERE s.source = p.source AND s.date BETWEEN p.previous_start AND p.previous_end) AS previous_synced,
         (SELECT sum(cost_usd) FROM daily d WHERE d.source = p.source AND d.date BETWEEN p.month_start AND p.as_of) AS month_usd,
         (SELECT sum(cost_usd) FROM daily d WHERE d.source = p.source AND d.date BETWEEN p.previous_start AND p.previous_end) AS previous_usd
  FROM spans p
), reasoned AS (
  SELECT *,
         CASE WHEN month_synced < day(as_of)
                THEN format('{} of the {} days {}..{} of this month are synced', month_synced, day(as_of), month_start, as_of)
              WHEN previous_synced < day(previous_end)
                THEN format('{} of the {} days {}..{} of last month are synced', previous_synced, day(previous_end), previous_start, previous_end)
              WHEN coalesce(previous_usd, 0) = 0 THEN 'no spend on the same days of last month' END AS no_change_reason
  FROM counted
)
-- A sum over days not all synced is NULL, not $0.00: those days' spend is unknown. A synced day without spend counts $0.
SELECT source, as_of, CASE WHEN month_synced >= day(as_of) THEN round(coalesce(month_usd, 0), 2) END AS month_to_date_usd,
       CASE WHEN previous_synced >= day(previous_end) THEN round(coalesce(previous_usd, 0), 2) END AS same_days_last_month_usd,
       CASE WHEN no_change_reason IS NULL OR no_change_reason LIKE 'no spend%' THEN round(coalesce(month_usd, 0) - coalesce(previous_usd, 0), 2) END AS change_usd,
       CASE WHEN no_change_reason IS NULL THEN round(100 * (month_usd - previous_usd) / previous_usd, 1) END AS change_pct,
       previous_start AS same_days_from, previous_end AS same_days_to, no_change_reason
FROM reasoned
