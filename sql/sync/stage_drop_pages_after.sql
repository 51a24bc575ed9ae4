-- Pages committed after the last saved cursor: fetched again on resume, so dropped first.
DELETE FROM $stage WHERE window_start = $1::DATE AND page > $2
