-- How many (source, date) pairs each reconciliation compared. $1/$2 = first and last date (NULL: all).
WITH li AS (SELECT DISTINCT source, usage_date AS date FROM line_items WHERE ($1::DATE IS NULL OR usage_date >= $1::DATE) AND ($2::DATE IS NULL OR usage_date <= $2::DATE)),
ro AS (SELECT source, date, count(DISTINCT group_by) AS group_bys, bool_or(group_by = 'provider') AS has_provider FROM rollups_daily
       WHERE ($1::DATE IS NULL OR date >= $1::DATE) AND ($2::DATE IS NULL OR date <= $2::DATE) GROUP BY source, date)
SELECT (SELECT count(*) FROM li JOIN ro USING (source, date) WHERE has_provider) AS line_item_dates,
       (SELECT count(*) FROM ro WHERE has_provider AND group_bys > 1) AS rollup_dates
