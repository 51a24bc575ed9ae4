-- Value kind "time": a calendar date or an ISO 8601 time (no zone means UTC), sent as YYYY-MM-DDTHH:mm:ssZ.
-- parse:
CASE WHEN regexp_full_match(trim({v}), '\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}(:?\d{2})?)?)?') THEN TRY_CAST(trim({v}) AS TIMESTAMPTZ) END
-- problem:
CASE WHEN {v} IS NOT NULL AND {p} IS NULL THEN {name} || ': not a date (YYYY-MM-DD) or ISO 8601 time: ' || left({v}, 40) END
-- json:
'"' || strftime({p}, '%Y-%m-%dT%H:%M:%SZ') || '"'
