-- Fragment: a window's spooled pages as line-item rows, with their page and place in it.
-- $1 = the window's page glob, $2 and $3 = the window's first and last date.
SELECT * FROM (
  SELECT
    rec->>'id' AS id,
    CAST(rec->>'usage_date' AS DATE) AS usage_date,
    rec->>'provider_type' AS provider_type,
    rec->>'provider_service' AS provider_service,
    CAST(rec->>'net_amount_usd' AS DOUBLE) AS net_amount_usd,
    rec->>'currency_original' AS currency_original,
    rec->>'project_id' AS project_id,
    rec->>'user_email' AS user_email,
    -- Fields the spec does not list: the record less the known ones (a null in a merge patch removes a key).
    CAST(nullif(json_merge_patch(rec, '{"id":null,"usage_date":null,"provider_type":null,"provider_service":null,"net_amount_usd":null,"currency_original":null,"project_id":null,"user_email":null}'), '{}') AS JSON) AS extra,
    CAST(parse_filename(filename, true) AS INTEGER) AS page,
    ord
  FROM (
    SELECT unnest(data) AS rec, unnest(generate_series(1, len(data))) AS ord, filename
    FROM read_json($1, columns = {data: 'JSON[]'}, filename = true)
  )
)
WHERE usage_date BETWEEN $2::DATE AND $3::DATE
