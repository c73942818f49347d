-- Where the re-indexing of resources written by an older version stands
-- (src/storage/search/reindex.ts, docs/rest.md#search-index-upgrades): the index version the
-- stored rows are at, and the last (type, id) re-indexed while it runs. A database without
-- resources starts current (2: composites, _text/_content and identifier types indexed).
CREATE TABLE search_reindex (
  id integer PRIMARY KEY CHECK (id = 1),
  version integer NOT NULL,
  after_type text,
  after_id text
);
INSERT INTO search_reindex (id, version) SELECT 1, CASE WHEN EXISTS (SELECT 1 FROM resource) THEN 1 ELSE 2 END;
