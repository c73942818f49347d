-- Who references a resource (a delete in a project with Project.checkReferencesOnWrite,
-- docs/rest.md#referential-integrity): search_reference by its target.
CREATE INDEX IF NOT EXISTS search_reference_target ON search_reference (target_id, target_type);
