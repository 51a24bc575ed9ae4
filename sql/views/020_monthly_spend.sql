-- What did each source spend each month, and how much did it change from the month before?
-- A month the synced dates (`synced_dates`) do not cover whole (the month in progress, a first month
-- synced from after the 1st, a month with a hole) is partial: `is_partial`, and no change is given
-- against it or for it, since a part month against a whole one is no fall and no rise. `days_synced`
-- counts its synced days; `synced_through` is the last day d with days 1..d all synced (NULL when the
-- 1st is not).
CREATE OR REPLACE VIEW monthly_spend AS
WITH {{verify/covered}}, months AS (
  SELECT source, date_trunc('month', date)::DATE AS month, sum(cost_usd) AS cost_usd, count(DISTINCT date) AS days_with_data,
         min(date) AS first_date, max(date) AS last_date
  FROM daily_spend_by_provider GROUP BY ALL
), synced_days AS (
  SELECT DISTINCT source, unnest(generate_series(from_date, to_date, INTERVAL 1 DAY))::DATE AS date FROM synced_dates
), month_days AS (
  SELECT source, month, unnest(generate_series(month, last_day(month), INTERVAL 1 DAY))::DATE AS date FROM months
), coverage AS (
  SELECT d.source, d.month, count(s.date) AS days_synced, min(d.date) FILTER (WHERE s.date IS NULL) AS first_unsynced
  FROM month_days d LEFT JOIN synced_days s ON s.source = d.source AND s.date = d.date GROUP BY ALL
), marked AS (
  SELECT m.*, c.days_synced, c.first_unsynced IS NOT NULL AS is_partial,
         CASE WHEN c.first_unsynced IS NULL THEN last_day(m.month) WHEN c.first_unsynced > m.month THEN (c.first_unsynced - 1)::DATE END AS synced_through,
         lag(m.cost_usd) OVER w AS previous_cost, lag(c.first_unsynced IS NOT NULL) OVER w AS previous_partial,
         lag(m.month) OVER w AS previous_month
  FROM months m JOIN coverage c USING (source, month) WINDOW w AS (PARTITION BY m.source ORDER BY m.month)
)
SELECT source, month, round(cost_usd, 2) AS cost_usd, days_with_data,
       CASE WHEN previous_month = month - INTERVAL 1 MONTH THEN round(previous_cost, 2) END AS previous_month_usd,
       CASE WHEN NOT is_partial AND NOT previous_partial AND previous_month = month - INTERVAL 1 MONTH THEN round(cost_usd - previous_cost, 2) END AS change_usd,
       CASE WHEN NOT is_partial AND NOT previous_partial AND previous_month = month - INTERVAL 1 MONTH
            THEN round(100 * (cost_usd - previous_cost) / nullif(previous_cost, 0), 1) END AS change_pct,
       is_partial, first_date, last_date, days_synced, synced_through
FROM marked;
COMMENT ON VIEW monthly_spend IS 'Spend per source and month with the change from the month before, in dollars and percent (none when either month is partial: is_partial, a month synced_dates does not cover whole)';
