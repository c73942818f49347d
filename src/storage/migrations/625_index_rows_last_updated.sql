-- A search driven by one token or reference value (Observation?subject=Patient/1, ?code=x|y)
-- in the default order (docs/rest.md#query-plans) read every match through the lookup index
-- and sorted them all for its page: a patient's 2,826 Observations for 10. The rows now carry
-- their resource's last_updated (every version rewrites its rows, so it never goes stale) and
-- the lookup index orders the rows of one value by it: the page is the first rows of the index
-- range, read in order, each probed for its resource and the rest of the search.
ALTER TABLE search_token ADD COLUMN IF NOT EXISTS last_updated timestamptz;
ALTER TABLE search_reference ADD COLUMN IF NOT EXISTS last_updated timestamptz;
UPDATE search_token x SET last_updated = r.last_updated FROM resource r WHERE r.resource_type = x.resource_type AND r.id = x.id;
UPDATE search_reference x SET last_updated = r.last_updated FROM resource r WHERE r.resource_type = x.resource_type AND r.id = x.id;
DROP INDEX IF EXISTS search_token_lookup;
CREATE INDEX search_token_lookup ON search_token (resource_type, param, code, last_updated, id);
DROP INDEX IF EXISTS search_reference_lookup;
CREATE INDEX search_reference_lookup ON search_reference (resource_type, param, target_id, last_updated, id);
ANALYZE search_token;
ANALYZE search_reference;
