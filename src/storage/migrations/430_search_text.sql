-- Full-text search `_text` (the narrative) and `_content` (every text of the resource),
-- docs/rest.md#text-search: one tsvector per resource and parameter, English configuration,
-- the same SQL on PostgreSQL and PGlite.
CREATE TABLE search_text (
  resource_type text NOT NULL,
  id text NOT NULL,
  param text NOT NULL,
  document tsvector NOT NULL
);
CREATE INDEX search_text_document ON search_text USING gin (document);
CREATE INDEX search_text_owner ON search_text (resource_type, id);
