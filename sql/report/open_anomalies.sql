-- Open anomalies detected in the period, newest first. $1/$2 = first and last date, $3 = source (NULL: all).
SELECT source, id, strftime(detected_date, '%Y-%m-%d') AS date, provider_type AS provider, service, alert_type, severity, status, excess_usd, deviation_percent
FROM open_anomalies WHERE detected_date::DATE BETWEEN $1::DATE AND $2::DATE AND ($3::VARCHAR IS NULL OR source = $3) ORDER BY detected_date DESC, source, id LIMIT 100
