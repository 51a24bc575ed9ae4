-- Value kind "string" for push validation. Tokens: {v} the value as text (NULL when empty), {p} the parsed value, {name} the column name.
-- parse:
{v}
-- problem:
NULL
-- json:
to_json({p})::VARCHAR
