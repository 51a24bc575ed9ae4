-- Open anomalies (new or acknowledged), newest first, with their excess in dollars.
SELECT strftime(detected_date, '%Y-%m-%d %H:%M') AS detected, severity, status, provider_type AS provider, service,
       round(actual_cost - expected_cost, 2) AS excess_usd, deviation_percent
FROM anomalies WHERE status IN ('new', 'acknowledged')
ORDER BY detected_date DESC, source, id LIMIT 10
