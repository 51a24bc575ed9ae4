-- Forgets lake $1's mark for source $2 (before the new one is recorded).
DELETE FROM _costsync_lake_marks WHERE lake = $1 AND source = $2
