-- Each lake this warehouse has written (its location and format), per source: the partitions the warehouse wrote since
-- the lake last caught up, which the lake's next run writes (0: it holds all the warehouse does), and their first and last dates.
WITH marks AS (SELECT lake, source, max(seq) AS seq FROM _costsync_lake_marks GROUP BY lake, source)
SELECT m.lake[strlen(split_part(m.lake, ':', 1)) + 2:] AS lake, split_part(m.lake, ':', 1) AS format, m.source,
  CAST(count(c.date) AS INTEGER) AS partitions_to_write,
  strftime(min(c.date), '%Y-%m-%d') || '..' || strftime(max(c.date), '%Y-%m-%d') AS dates
FROM marks m LEFT JOIN _costsync_partition_changes c ON c.source = m.source AND c.seq > m.seq
GROUP BY m.lake, m.source ORDER BY lake, format, m.source
