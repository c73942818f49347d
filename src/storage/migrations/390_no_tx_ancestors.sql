-- The database keeps the direct edges of a hierarchy only (docs/terminology.md#hierarchy-storage):
-- tx_ancestors (every concept's ancestors as an array) goes. Its readers were the SQL point read
-- "is A an ancestor of B" before a code system's in-memory index is built, the SQL reference of
-- the filters and `$import` keeping it up to date; they walk the direct edges of tx_closure
-- instead (a recursive query: up from B, tens of rows; down from A for the reference filters).
-- Writing it was a fifth of a SNOMED-size import (15M ancestor entries, 90 MB), for a closure the
-- in-memory index computes again from the edges anyway.
DROP TABLE tx_ancestors;
