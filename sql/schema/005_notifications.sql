-- Notifications to webhooks, an outbox: an event is recorded here in the same transaction as the
-- change that causes it (one row per event and webhook), sent after the commit, and marked sent
-- only once the receiver answered 2xx. `target` is a fingerprint of the webhook URL, never the URL.
CREATE TABLE IF NOT EXISTS _costsync_notifications (
  event_id   VARCHAR NOT NULL,   -- stable: a receiver can drop repeats
  target     VARCHAR NOT NULL,
  source     VARCHAR NOT NULL,
  kind       VARCHAR NOT NULL,   -- anomaly, severity_rose, status_changed, run_failed, run_stopped
  event      JSON NOT NULL,
  created_at TIMESTAMPTZ NOT NULL,
  sent_at    TIMESTAMPTZ,
  attempts   INTEGER DEFAULT 0,
  last_error VARCHAR,
  PRIMARY KEY (event_id, target)
);

ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS notifications_sent INTEGER DEFAULT 0;
ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS notification_failures INTEGER DEFAULT 0;
-- Responses per HTTP status of a run's stream, as {"200": 30, "429": 1}, for the metrics file.
ALTER TABLE sync_run_streams ADD COLUMN IF NOT EXISTS responses JSON;
