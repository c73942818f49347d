-- The hierarchy stored compactly (docs/terminology.md#hierarchy-storage): tx_closure keeps only
-- the direct edges (depth 1: parents/children, child-of, the in-memory index), and the
-- transitive part is one row per concept with the sorted array of all its ancestors. For a
-- SNOMED-size system that is 350k rows instead of ~15M pairs (each with two B-tree entries):
-- "is A an ancestor of B" is one primary-key probe, "descendants of A" one GIN probe.
CREATE TABLE tx_ancestors (
  cs_key integer NOT NULL,
  concept integer NOT NULL,
  ancestors integer[] NOT NULL,
  PRIMARY KEY (cs_key, concept)
);
CREATE INDEX tx_ancestors_gin ON tx_ancestors USING gin (ancestors);
INSERT INTO tx_ancestors (cs_key, concept, ancestors)
  SELECT cs_key, descendant, array_agg(ancestor ORDER BY ancestor) FROM tx_closure GROUP BY cs_key, descendant;
DELETE FROM tx_closure WHERE depth > 1;
DROP INDEX tx_closure_ancestor;
CREATE INDEX tx_closure_ancestor ON tx_closure (cs_key, ancestor);
