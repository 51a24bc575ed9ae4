-- How many dates each reconciliation compared. $2/$3 = first and last date (NULL: all); $1 is unused.
WITH li AS (SELECT DISTINCT usage_date AS date FROM line_items WHERE ($2::DATE IS NULL OR usage_date >= $2::DATE) AND ($3::DATE IS NULL OR usage_date <= $3::DATE)),
ro AS (SELECT date, count(DISTINCT group_by) AS group_bys, bool_or(group_by = 'provider') AS has_provider FROM rollups_daily
       WHERE ($2::DATE IS NULL OR date >= $2::DATE) AND ($3::DATE IS NULL OR date <= $3::DATE) AND $1::DOUBLE IS NOT NULL GROUP BY date)
SELECT (SELECT count(*) FROM li JOIN ro USING (date) WHERE has_provider) AS line_item_dates,
       (SELECT count(*) FROM ro WHERE has_provider AND group_bys > 1) AS rollup_dates
