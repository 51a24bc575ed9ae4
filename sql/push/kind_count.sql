-- Value kind "count" (token counts): finite, non-negative numbers, sent as JSON numbers.
-- parse:
TRY_CAST(trim({v}) AS DOUBLE)
-- problem:
CASE WHEN {v} IS NOT NULL AND ({p} IS NULL OR isinf({p}) OR isnan({p})) THEN {name} || ': not a finite number: ' || left({v}, 40) WHEN {p} < 0 THEN {name} || ': a count cannot be negative: ' || left({v}, 40) END
-- json:
CAST({p} AS VARCHAR)
