-- Checks and normalizes a file's rows for FOCUS ingest, one output row per input row in file order.
-- {values}: each column's value as text; {parsed}: each value parsed; {outputs}: _problems (the row's
-- problems joined by chr(31), NULL when none) and, when sending, _json (the row as a JSON object).
-- $1 = the file's path.
SELECT {outputs}
FROM (
  SELECT {parsed}
  FROM (SELECT {values} FROM ({source}))
)
