-- Runs still marked running when a new run holds the lock were killed.
UPDATE sync_runs SET outcome = 'killed' WHERE outcome = 'running'
