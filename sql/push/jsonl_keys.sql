-- The keys used by the objects of a JSON Lines file. $1 = path.
SELECT DISTINCT unnest(json_keys(json)) AS key FROM read_ndjson_objects($1) ORDER BY key
