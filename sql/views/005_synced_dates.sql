-- Which dates does the warehouse hold as synced? Per source (workspace) and windowed stream (line_items,
-- rollups), each range of dates a sync stored whole, as the warehouse carries its progress. A date
-- outside every range was never synced (or was dropped): its spend is unknown, not zero. Every reader
-- of coverage (status, verify, monthly_spend, month_to_date, the report) asks this.
CREATE OR REPLACE VIEW synced_dates AS
{{coverage/synced_dates}};
COMMENT ON VIEW synced_dates IS 'Per source and stream (line_items, rollups), each range of dates (from_date..to_date) the warehouse holds as synced';
