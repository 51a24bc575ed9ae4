-- Open anomalies detected in the period, newest first. $1/$2 = first and last date.
SELECT id, strftime(detected_date, '%Y-%m-%d') AS date, provider_type AS provider, service, severity, status, excess_usd, round(deviation_percent, 1) AS deviation_percent
FROM open_anomalies WHERE detected_date::DATE BETWEEN $1::DATE AND $2::DATE ORDER BY detected_date DESC, id LIMIT 100
