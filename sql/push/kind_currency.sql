-- Value kind "currency": a three-letter code, sent upper-case.
-- parse:
CASE WHEN regexp_full_match(trim({v}), '[A-Za-z]{3}') THEN upper(trim({v})) END
-- problem:
CASE WHEN {v} IS NOT NULL AND {p} IS NULL THEN {name} || ': not a three-letter currency code: ' || left({v}, 40) END
-- json:
'"' || {p} || '"'
