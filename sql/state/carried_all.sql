-- The sync state the warehouse carries, for every source (read once at the start of a run: with
-- hundreds of sources, a query each would wait in the warehouse's queue behind the others' pages).
SELECT source, state::VARCHAR AS state FROM _costsync_sync_state
