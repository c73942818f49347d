-- The publication status of an indexed code system (docs/terminology.md#status-of-the-resources-used):
-- a JSON object {status, experimental, standardsStatus} taken from CodeSystem.status,
-- CodeSystem.experimental and its structuredefinition-standards-status extension; NULL when it
-- states none of them.
ALTER TABLE tx_code_system ADD COLUMN publication text;

-- Code systems indexed before this column existed: taken from their stored resource, so their
-- status is reported without writing each again (the same object the indexer writes).
UPDATE tx_code_system t
SET publication = p.doc::text
FROM (
  SELECT r.id, jsonb_strip_nulls(jsonb_build_object(
      'status', c->>'status',
      'experimental', CASE WHEN jsonb_typeof(c->'experimental') = 'boolean' THEN (c->'experimental')::boolean END,
      'standardsStatus', (SELECT e->>'valueCode' FROM jsonb_array_elements(CASE WHEN jsonb_typeof(c->'extension') = 'array' THEN c->'extension' ELSE '[]'::jsonb END) e
                          WHERE e->>'url' = 'http://hl7.org/fhir/StructureDefinition/structuredefinition-standards-status' LIMIT 1)
    )) AS doc
  FROM resource r CROSS JOIN LATERAL (SELECT r.content::jsonb AS c) j
  WHERE r.resource_type = 'CodeSystem' AND NOT r.deleted
) p
WHERE t.resource_id = p.id AND t.scope IS NULL AND t.publication IS NULL AND p.doc <> '{}'::jsonb;
