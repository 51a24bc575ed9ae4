-- Value kind "date" (ChargePeriodStart): read and checked as kind "time" (its parse and problem), sent as
-- the UTC calendar date YYYY-MM-DD, the API document's "a calendar date string".
-- json:
'"' || strftime(timezone('UTC', {p}), '%Y-%m-%d') || '"'
-- id:
'"' || strftime({p}, '%Y-%m-%dT%H:%M:%SZ') || '"'
