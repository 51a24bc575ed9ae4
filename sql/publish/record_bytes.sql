-- The published file's size, once recording the publish in it has settled it. $1 = run id, $2 = bytes.
UPDATE sync_runs SET publish_bytes = $2 WHERE run_id = $1
