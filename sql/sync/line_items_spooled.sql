-- Fragment: a window's spooled pages as line-item rows, with their page and place in it.
-- $1 = the window's page glob, $2 and $3 = the window's first and last date.
SELECT * FROM (
  SELECT
    -- One JSON parse per record into the known fields...
    unnest(from_json(rec, '{"id":"VARCHAR","usage_date":"DATE","provider_type":"VARCHAR","provider_service":"VARCHAR","net_amount_usd":"DOUBLE","currency_original":"VARCHAR","project_id":"VARCHAR","user_email":"VARCHAR"}')),
    -- ...and the fields the spec does not list: the record less the known ones (a null in a merge patch removes a key).
    CAST(nullif(json_merge_patch(rec, '{"id":null,"usage_date":null,"provider_type":null,"provider_service":null,"net_amount_usd":null,"currency_original":null,"project_id":null,"user_email":null}'), '{}') AS JSON) AS extra,
    page,
    ord
  FROM (
    SELECT unnest(data) AS rec, unnest(generate_series(1, len(data))) AS ord, CAST(parse_filename(filename, true) AS INTEGER) AS page
    FROM read_json($1, columns = {data: 'JSON[]'}, filename = true, maximum_object_size = 4194304)
  )
)
WHERE usage_date BETWEEN $2::DATE AND $3::DATE
