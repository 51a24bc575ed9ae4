-- Value kind "date_end" (ChargePeriodEnd): read and checked as kind "time", sent as a UTC calendar date:
-- the date of the first midnight at or after the value, so an exclusive end (as FOCUS's) still covers
-- the period and stays after ChargePeriodStart's date.
-- json:
'"' || strftime(CAST(timezone('UTC', {p}) + to_microseconds(86399999999) AS DATE), '%Y-%m-%d') || '"'
-- id:
'"' || strftime({p}, '%Y-%m-%dT%H:%M:%SZ') || '"'
