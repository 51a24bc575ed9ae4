-- Open anomalies (new or acknowledged) per source and severity.
SELECT source, severity, count(*) AS n FROM anomalies WHERE status IN ('new', 'acknowledged') GROUP BY ALL ORDER BY ALL
