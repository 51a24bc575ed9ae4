-- The Iceberg REST catalog (and namespace) a lake table is committed through; null for a directory table.
ALTER TABLE _costsync_lake_tables ADD COLUMN IF NOT EXISTS catalog VARCHAR;
