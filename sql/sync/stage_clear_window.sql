-- Forget every staged page of a window ($stage is substituted by name, never from input).
DELETE FROM $stage WHERE window_start = $1::DATE
