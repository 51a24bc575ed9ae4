-- Value kind "number" (costs, prices, quantities): finite numbers, sent as JSON numbers.
-- parse:
TRY_CAST(trim({v}) AS DOUBLE)
-- problem:
CASE WHEN {v} IS NOT NULL AND ({p} IS NULL OR isinf({p}) OR isnan({p})) THEN {name} || ': not a finite number: ' || left({v}, 40) END
-- json:
CAST({p} AS VARCHAR)
