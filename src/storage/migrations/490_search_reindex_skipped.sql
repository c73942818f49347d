-- Resources the background re-index could not index (src/storage/search/reindex.ts,
-- docs/rest.md#search-index-upgrades): it skips them, logs them, and lists them here so an
-- operator finds them. `version` is the index version it was building; `reason` what failed.
CREATE TABLE search_reindex_skipped (
  resource_type text NOT NULL,
  id text NOT NULL,
  version integer NOT NULL,
  reason text NOT NULL,
  skipped_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (resource_type, id)
);
