-- Is each source spending more this month than last? Days 1..d of d's month against days 1..d of the
-- month before (clipped to its length: 31 March against 1..28 February), d being the last complete
-- synced UTC day: the latest date synced (its streams' coverage, or data) before today and before the
-- day of the source's latest sync. Where those days are not all synced (a first sync from the 15th,
-- data for the 1st..5th only), the change is NULL and `no_change_reason` says why; so is the sum of those days.
CREATE OR REPLACE VIEW month_to_date AS
WITH as_of_cap AS (SELECT NULL::DATE AS d), {{verify/month_to_date}};
COMMENT ON VIEW month_to_date IS 'Per source, days 1..d of this month against days 1..d of last month (d: the last complete synced UTC day); change and the sum NULL, with no_change_reason, where those days are not all synced';
