-- Which dates of which table and source changed, in order, whether or not a run wrote a lake; and, per
-- lake and source, the last change the lake holds. A lake that runs without it did not write catches
-- up from here (a new --out is filled; a second --out is no other's shadow).
CREATE SEQUENCE IF NOT EXISTS _costsync_change_seq START 1;
CREATE TABLE IF NOT EXISTS _costsync_partition_changes (
  tbl    VARCHAR NOT NULL,
  source VARCHAR NOT NULL,
  date   DATE NOT NULL,
  seq    BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS _costsync_lake_marks (
  lake   VARCHAR NOT NULL,
  source VARCHAR NOT NULL,
  seq    BIGINT NOT NULL
);
