-- No GIN index on the ancestor arrays (docs/terminology.md#hierarchy-storage). No request path
-- used it — "descendants of" are answered from the in-memory index — but maintaining it was
-- most of the cost of loading a large code system: at SNOMED size (~15M ancestor entries) 36 of
-- the 74 s of a PGlite import, 19 of the 50 s on PostgreSQL, and 67 MB. The SQL reference path
-- of the filters tests each concept's own array (a primary-key probe), and `$import` finds the
-- descendants of a child by walking the direct edges of tx_closure down (cs_key, ancestor).
DROP INDEX tx_ancestors_gin;
