-- Where is spend growing or shrinking? Services of each source by the change of their last 7 days against the 7 days before, as of the latest day with data.
CREATE OR REPLACE VIEW top_movers AS
WITH latest AS (SELECT max(date) AS as_of FROM daily_spend_by_service),
windows AS (
  SELECT source, service,
         coalesce(sum(cost_usd) FILTER (WHERE date > as_of - INTERVAL 7 DAYS), 0) AS last_7_days_usd,
         coalesce(sum(cost_usd) FILTER (WHERE date <= as_of - INTERVAL 7 DAYS AND date > as_of - INTERVAL 14 DAYS), 0) AS prior_7_days_usd
  FROM daily_spend_by_service, latest
  WHERE date > as_of - INTERVAL 14 DAYS
  GROUP BY source, service
)
SELECT source, service, round(last_7_days_usd, 2) AS last_7_days_usd, round(prior_7_days_usd, 2) AS prior_7_days_usd,
       round(last_7_days_usd - prior_7_days_usd, 2) AS change_usd,
       round(100 * (last_7_days_usd - prior_7_days_usd) / nullif(prior_7_days_usd, 0), 1) AS change_pct
FROM windows
ORDER BY abs(last_7_days_usd - prior_7_days_usd) DESC, service, source;
COMMENT ON VIEW top_movers IS 'Services per source by the change of their last 7 days of spend against the 7 days before, in dollars and percent';
