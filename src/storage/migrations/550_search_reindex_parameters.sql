-- Which stored SearchParameters (an implementation guide's, docs/profiles.md#searchparameters) the
-- search index rows were written with: a digest of them, NULL for none. When the SearchParameters
-- held change, the start that sees it re-indexes every resource in the background
-- (src/storage/search/stored-parameters.ts, the same pass as an index upgrade: reindex.ts).
ALTER TABLE search_reindex ADD COLUMN parameters text;
