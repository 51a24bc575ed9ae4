-- A digest of every synced table's content, to compare two warehouses (run-time columns left out).
SELECT 'line_items' AS "table", count(*) AS rows, md5(coalesce(string_agg(t::VARCHAR, '|' ORDER BY t::VARCHAR), '')) AS digest
FROM line_items t
UNION ALL
SELECT 'rollups_daily', count(*), md5(coalesce(string_agg(t::VARCHAR, '|' ORDER BY t::VARCHAR), ''))
FROM rollups_daily t
UNION ALL
SELECT 'anomalies', count(*), md5(coalesce(string_agg(t::VARCHAR, '|' ORDER BY t::VARCHAR), ''))
FROM (SELECT * EXCLUDE (first_seen_at, last_seen_at) FROM anomalies) t
UNION ALL
SELECT 'anomaly_status_history', count(*), md5(coalesce(string_agg(t::VARCHAR, '|' ORDER BY t::VARCHAR), ''))
FROM (SELECT * EXCLUDE (observed_at, run_id) FROM anomaly_status_history) t
UNION ALL
SELECT 'duplicate_line_item_ids', count(*), '' FROM (SELECT id FROM line_items GROUP BY id HAVING count(*) > 1)
ORDER BY 1
