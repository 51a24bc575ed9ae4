-- FOCUS 1.3's Recency, per source (a FOCUS dataset instance of Cost and Usage) and day the warehouse
-- holds (a time sector): when costsync last found the day's line items equal to the API (its window
-- committed, or a recheck found its sums equal), and whether the API had had the lookback to fill it by
-- then. Read from the progress the warehouse carries (`_costsync_sync_state`, its `confirmed` ranges:
-- src/state/recency.ts); a day no run has confirmed yet (synced by an older costsync) has no row.
CREATE OR REPLACE VIEW focus_recency AS
WITH confirmed AS (
  SELECT source, r['from'] AS from_date, r['to'] AS to_date, r['at'] AS at, r['complete'] AS complete
  FROM (
    SELECT source, unnest(from_json(json_extract(state, '$.streams.line_items.confirmed'),
                                    '[{"from": "DATE", "to": "DATE", "at": "TIMESTAMPTZ", "complete": "BOOLEAN"}]')) AS r
    FROM _costsync_sync_state
  )
),
held AS (SELECT source, from_date, to_date FROM synced_dates WHERE stream = 'line_items')
SELECT
  c.source AS DatasetInstanceId,
  d.day::TIMESTAMP AT TIME ZONE 'UTC' AS TimeSectorStart,
  (d.day + INTERVAL 1 DAY)::TIMESTAMP AT TIME ZONE 'UTC' AS TimeSectorEnd,
  c.complete AS TimeSectorComplete,
  c.at AS TimeSectorLastUpdated
FROM confirmed c, LATERAL (SELECT unnest(generate_series(c.from_date, c.to_date, INTERVAL 1 DAY))::DATE AS day) d
WHERE EXISTS (SELECT 1 FROM held h WHERE h.source = c.source AND d.day BETWEEN h.from_date AND h.to_date);
COMMENT ON VIEW focus_recency IS 'FOCUS 1.3 Recency time sectors: per source (DatasetInstanceId) and day held, when its line items were last found equal to the API (TimeSectorLastUpdated) and whether the API had had the lookback to fill the day by then (TimeSectorComplete)';
