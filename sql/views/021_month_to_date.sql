-- Is each source spending more this month than last? Month to date, as of its latest day with data, against the same days of last month.
CREATE OR REPLACE VIEW month_to_date AS
WITH daily AS (SELECT source, date, sum(cost_usd) AS cost_usd FROM daily_spend_by_provider GROUP BY ALL),
latest AS (SELECT source, max(date) AS as_of FROM daily GROUP BY source)
SELECT source, as_of,
       round(sum(cost_usd) FILTER (WHERE date BETWEEN date_trunc('month', as_of) AND as_of), 2) AS month_to_date_usd,
       round(sum(cost_usd) FILTER (WHERE date BETWEEN date_trunc('month', as_of) - INTERVAL 1 MONTH AND as_of - INTERVAL 1 MONTH), 2) AS same_days_last_month_usd,
       round(month_to_date_usd - same_days_last_month_usd, 2) AS change_usd,
       round(100 * (month_to_date_usd - same_days_last_month_usd) / nullif(same_days_last_month_usd, 0), 1) AS change_pct
FROM daily JOIN latest USING (source)
GROUP BY source, as_of;
COMMENT ON VIEW month_to_date IS 'Per source, month to date (as of its latest day with data) against the same days of last month';
