-- Query plans (docs/rest.md#query-plans): indexes that yield a search's page in its order, so a
-- search with many matches reads the page, not every match.
-- The default order (_lastUpdated, then id) and `_sort=_lastUpdated` read the current rows of a
-- type in index order; every reader of `resource` by type and time skips deleted rows.
DROP INDEX IF EXISTS resource_type_updated;
CREATE INDEX resource_type_updated ON resource (resource_type, last_updated, id) WHERE NOT deleted;
-- `_sort` by a string parameter (a HumanName's one "family given" row per name) and by a date
-- (ascending: its start; descending: its end), then id: walked in order, forwards or backwards.
-- The date index by start replaces the lookup by (start, end): range conditions on the end are
-- checked from the included column.
CREATE INDEX search_string_sort ON search_string (resource_type, param, value, id) WHERE sort_key;
DROP INDEX IF EXISTS search_date_lookup;
CREATE INDEX search_date_lookup ON search_date (resource_type, param, low, id) INCLUDE (high);
CREATE INDEX search_date_high ON search_date (resource_type, param, high, id);
