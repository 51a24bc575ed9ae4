-- The first UTC date of an alert a source holds, or null (where a full refresh of anomalies starts). $1 = source.
SELECT min(CAST(timezone('UTC', detected_date) AS DATE))::VARCHAR AS first FROM anomalies WHERE source = $1
