-- The standard extensions of a designation (docs/terminology.md#concept-extensions): its
-- SNOMED description id (coding-sctdescid) and its standards status (a `withdrawn` or
-- `deprecated` designation is inactive). A JSON array of extensions, NULL when there are none.
ALTER TABLE tx_designation ADD COLUMN extension text;
