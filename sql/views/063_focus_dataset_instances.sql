-- FOCUS 1.3's Dataset Instance and Recency objects, one per source (its Cost and Usage, daily): the time
-- of its latest confirmation (`focus_recency`) is when costsync last brought it, or found it, equal to the API.
CREATE OR REPLACE VIEW focus_dataset_instances AS
SELECT
  DatasetInstanceId,
  DatasetInstanceId || ' cost and usage (daily)' AS DatasetInstanceName,
  'CostAndUsage' AS FocusDatasetId,
  max(TimeSectorLastUpdated) AS DatasetInstanceLastUpdated,
  max(TimeSectorLastUpdated) AS RecencyLastUpdated,
  min(TimeSectorStart) AS x_HeldFrom,
  max(TimeSectorEnd) AS x_HeldTo,
  count(*) AS x_TimeSectors,
  count(*) FILTER (WHERE TimeSectorComplete) AS x_TimeSectorsComplete
FROM focus_recency
GROUP BY DatasetInstanceId;
COMMENT ON VIEW focus_dataset_instances IS 'FOCUS 1.3 Dataset Instance and Recency per source: its id, name, dataset (CostAndUsage) and when it was last found equal to the API';
