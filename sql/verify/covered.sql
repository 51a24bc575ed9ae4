-- (A fragment.) `synced_dates` (the view's query, so a reader of a warehouse an older costsync published,
-- which lacks the view, gets the same answer) and `covered`, its ranges as structs for the range tests.
synced_dates AS ({{coverage/synced_dates}}),
covered AS (SELECT source AS covered_source, stream AS covered_stream, {'from': from_date, 'to': to_date} AS r FROM synced_dates)
