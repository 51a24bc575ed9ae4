-- Value kind "tags": a flat JSON object (no nested objects or arrays), sent as the object's own text.
-- (Re-serializing it with json() here made DuckDB 1.5 run out of memory on large files.) Identity and the
-- ledger compare it as its sorted members (canon), so key order and spacing do not make it another value.
-- parse:
CASE WHEN json_valid({v}) AND json_type({v}) = 'OBJECT' AND coalesce(list_bool_and(list_transform(json_extract({v}, '$.*'), x -> json_type(x) NOT IN ('OBJECT', 'ARRAY'))), true) THEN {v} END
-- problem:
CASE WHEN {v} IS NOT NULL AND {p} IS NULL THEN {name} || ': not a flat JSON object: ' || left({v}, 40) END
-- json:
{p}
-- canon:
to_json(list_sort(map_entries(CAST({p}::JSON AS MAP(VARCHAR, JSON)))))::VARCHAR
