-- Lake $1 holds every change of source $2 made so far.
INSERT INTO _costsync_lake_marks SELECT $1, $2, coalesce(max(seq), 0) FROM _costsync_partition_changes WHERE source = $2
