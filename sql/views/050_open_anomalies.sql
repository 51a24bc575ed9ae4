-- What needs attention? Anomalies still open (new or acknowledged), with their size in dollars, newest first.
CREATE OR REPLACE VIEW open_anomalies AS
SELECT source, id, detected_date, provider_type, service, severity, status, alert_type,
       actual_cost, expected_cost, round(actual_cost - expected_cost, 2) AS excess_usd, deviation_percent
FROM anomalies WHERE status IN ('new', 'acknowledged')
ORDER BY detected_date DESC, source, id;
COMMENT ON VIEW open_anomalies IS 'Open anomalies (new or acknowledged) per source with their excess over expected in dollars, newest first';
