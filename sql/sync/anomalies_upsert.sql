-- Upsert staged anomalies by source and id; first_seen_at stays, last_seen_at moves. $1 = now, $2 = source.
INSERT INTO anomalies (id, provider_type, service, detected_date, actual_cost, expected_cost, deviation_percent,
                       severity, alert_type, status, extra, first_seen_at, last_seen_at, source)
SELECT id, provider_type, service, detected_date, actual_cost, expected_cost, deviation_percent,
       severity, alert_type, status, extra, $1::TIMESTAMPTZ, $1::TIMESTAMPTZ, $2
FROM _stage_anomalies
QUALIFY row_number() OVER (PARTITION BY id ORDER BY ord DESC) = 1
ON CONFLICT (source, id) DO UPDATE SET
  provider_type = excluded.provider_type, service = excluded.service, detected_date = excluded.detected_date,
  actual_cost = excluded.actual_cost, expected_cost = excluded.expected_cost,
  deviation_percent = excluded.deviation_percent, severity = excluded.severity,
  alert_type = excluded.alert_type, status = excluded.status, extra = excluded.extra,
  last_seen_at = excluded.last_seen_at
