-- A JSON Lines file, one JSON object per line, in file order. $1 = path.
SELECT json AS _object FROM read_ndjson_objects($1)
