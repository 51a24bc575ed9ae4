-- The digest of the analyst views' SQL (sql/views/) they were last created from: a warehouse opened by
-- the same costsync keeps its views as they are instead of creating them again at every open.
CREATE TABLE IF NOT EXISTS _costsync_views (digest VARCHAR NOT NULL);
