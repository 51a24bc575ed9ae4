-- Line items the warehouse holds per date, for several sources' date ranges in one scan (the progress
-- estimate: every source asks at its start, and with hundreds of sources a scan each took seconds).
-- $1 = JSON list of {"i", "source", "from", "to"} (i: the ask's place, for its answer); $2/$3 = the
-- earliest and latest date asked (lets DuckDB skip row groups outside them).
WITH asked AS (SELECT unnest(from_json($1::VARCHAR, '[{"i":"INTEGER","source":"VARCHAR","from":"DATE","to":"DATE"}]'), recursive := true))
SELECT asked.i, strftime(usage_date, '%Y-%m-%d') AS date, count(*) AS n
FROM line_items JOIN asked ON line_items.source = asked.source AND usage_date BETWEEN asked."from" AND asked."to"
WHERE usage_date BETWEEN $2::DATE AND $3::DATE
GROUP BY ALL
