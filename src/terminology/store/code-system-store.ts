import type { CodeSystem } from '@medplum/fhirtypes';
import { badRequest } from '../../fhir/outcome.js';
import type { Database, Queryable } from '../../core/database.js';
import { bulkInsert } from './bulk-insert.js';
import { ClosureTooLarge } from '../providers/fhir/closure.js';
import { writeHierarchy } from './hierarchy-store.js';
import { announceCodeSystemChange } from '../providers/fhir/index-cache.js';
import { codeSystemRows, type ConceptRow, type DesignationRow, type PropertyRow, type RowBatch } from '../providers/fhir/code-system-rows.js';
import { DESIGNATION_COLUMNS, PROPERTY_COLUMNS } from './index-columns.js';
import { publicationOf } from '../providers/publication.js';

/**
 * Write side of the terminology index: (re-)indexes one CodeSystem in the caller's transaction
 * with bulk statements, and removes an index. Every CodeSystem gets a metadata row (so its
 * canonical resolves whatever its `content`); concepts are indexed when it has any.
 */

export interface IndexTarget {
  resourceId: string;
  projectId: string | undefined;
  /** Request scope (tx-resource) or undefined for a stored resource. */
  scope?: string;
  lastUpdated: string;
}

/** Every table keyed by `cs_key` (the SNOMED CT ones: docs/terminology.md#snomed-ct, migration 430). */
export const CHILD_TABLES = [
  'tx_concept',
  'tx_concept_property',
  'tx_designation',
  'tx_closure',
  'tx_sct_concept',
  'tx_sct_relationship',
  'tx_sct_concrete',
  'tx_sct_member',
  'tx_sct_acceptability',
];
/** Code systems at least this large refresh the planner statistics after indexing. */
const ANALYZE_THRESHOLD = 5_000;

/**
 * Indexes `cs` (replacing any previous index of the same resource id); returns its key. A
 * CodeSystem with `content: not-present` does not carry its concepts: when it is already indexed
 * (concepts added by $import or `lattice import`), only its metadata is updated.
 */
export async function indexCodeSystem(
  q: Queryable,
  cs: CodeSystem,
  target: IndexTarget,
  onProgress?: (done: number, total: number) => void,
): Promise<number> {
  if (cs.content === 'not-present' && !cs.concept?.length && target.scope === undefined) {
    const kept = await q.query<{ cs_key: number }>(
      `UPDATE tx_code_system SET project_id = $2, url = $3, version = $4, last_updated = $5, case_sensitive = $6,
         hierarchy_meaning = $7, supplements = $8, language = $9, name = $10, title = $11, property_defs = $12,
         publication = $13
       WHERE resource_id = $1 AND concept_count > 0 RETURNING cs_key`,
      [
        target.resourceId,
        target.projectId ?? null,
        cs.url ?? '',
        cs.version ?? null,
        target.lastUpdated,
        cs.caseSensitive !== false,
        cs.hierarchyMeaning ?? null,
        cs.supplements ?? null,
        cs.language ?? null,
        cs.name ?? null,
        cs.title ?? null,
        JSON.stringify(cs.property ?? []),
        publicationText(cs),
      ],
    );
    if (kept.rows.length > 0) {
      await announceCodeSystemChange(q, target.resourceId);
      return kept.rows[0].cs_key;
    }
  }
  await removeCodeSystemIndex(q, target.resourceId);
  const rows = codeSystemRows(cs);
  const key = await insertCodeSystemRow(q, cs, target, rows.concepts.length);
  const { concepts, properties, designations } = rows;
  const total = concepts.length * 2 + properties.length + designations.length;
  let done = 0;
  await insertRowBatch(q, key, { firstId: 1, concepts, properties, designations }, onProgress ? (n) => onProgress((done += n), total) : undefined);
  await finishHierarchy(q, key, concepts.length, rows.edges, onProgress ? (n) => onProgress(done + n, total) : undefined);
  return key;
}

/** The metadata row of an index (concepts follow under the key it returns). */
export async function insertCodeSystemRow(q: Queryable, cs: CodeSystem, target: IndexTarget, conceptCount: number): Promise<number> {
  const inserted = await q.query<{ cs_key: number }>(
    `INSERT INTO tx_code_system (resource_id, project_id, scope, url, version, last_updated, content, case_sensitive,
       hierarchy_meaning, supplements, language, name, title, property_defs, concept_count, publication)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) RETURNING cs_key`,
    [
      target.resourceId,
      target.projectId ?? null,
      target.scope ?? null,
      cs.url ?? '',
      cs.version ?? null,
      target.lastUpdated,
      cs.content ?? 'complete',
      cs.caseSensitive !== false,
      cs.hierarchyMeaning ?? null,
      cs.supplements ?? null,
      cs.language ?? null,
      cs.name ?? null,
      cs.title ?? null,
      JSON.stringify(cs.property ?? []),
      conceptCount,
      publicationText(cs),
    ],
  );
  return inserted.rows[0].cs_key;
}

/** Writes a batch of concept, property and designation rows of index `key`. */
export async function insertRowBatch(q: Queryable, key: number, batch: RowBatch, onRows?: (rows: number) => void): Promise<void> {
  const k = { cs_key: { type: 'int', value: key } };
  const { concepts, properties, designations, firstId } = batch;
  await bulkInsert<ConceptRow>(
    q,
    'tx_concept',
    k,
    [
      { name: 'id', type: 'int', value: (_r, i) => firstId + i },
      { name: 'code', type: 'text', value: (r) => r.code },
      { name: 'code_lower', type: 'text', value: (r) => r.code.toLowerCase() },
      { name: 'display', type: 'text', value: (r) => r.display },
      { name: 'definition', type: 'text', value: (r) => r.definition },
      { name: 'inactive', type: 'boolean', value: (r) => r.inactive },
      { name: 'abstract', type: 'boolean', value: (r) => r.abstract },
      { name: 'status', type: 'text', value: (r) => r.status },
    ],
    concepts.length,
    (i) => concepts[i],
    onRows,
  );
  await bulkInsert<PropertyRow>(q, 'tx_concept_property', k, PROPERTY_COLUMNS, properties.length, (i) => properties[i], onRows);
  await bulkInsert<DesignationRow>(q, 'tx_designation', k, DESIGNATION_COLUMNS, designations.length, (i) => designations[i], onRows);
}

/**
 * Writes the hierarchy of index `key` (n concepts) and refreshes the planner statistics after a
 * large load. A hierarchy too large to index is the client's 400.
 */
export async function finishHierarchy(
  q: Queryable,
  key: number,
  n: number,
  edges: Array<[number, number]>,
  onProgress?: (conceptsDone: number) => void,
): Promise<void> {
  try {
    await writeHierarchy(q, key, n, edges, onProgress);
  } catch (err) {
    if (err instanceof ClosureTooLarge) throw badRequest('CodeSystem hierarchy is too large to index', 'CodeSystem.concept');
    throw err;
  }
  // Fresh statistics after a large load: PGlite has no autovacuum, and PostgreSQL's runs later;
  // without them the planner misjudges the hierarchy joins of the first requests.
  if (n >= ANALYZE_THRESHOLD) await q.query(`ANALYZE ${CHILD_TABLES.join(', ')}`);
}

/** Removes the index of one resource (no-op when it has none). */
export async function removeCodeSystemIndex(q: Queryable, resourceId: string): Promise<void> {
  // Every write of an index passes here (a re-index removes first): every node drops its copy.
  await announceCodeSystemChange(q, resourceId);
  const found = await q.query<{ cs_key: number }>('DELETE FROM tx_code_system WHERE resource_id = $1 RETURNING cs_key', [resourceId]);
  for (const { cs_key } of found.rows) await removeIndexRows(q, cs_key);
}

/** Removes the concept, property, designation and hierarchy rows of index `key`. */
export async function removeIndexRows(q: Queryable, key: number): Promise<void> {
  for (const table of CHILD_TABLES) await q.query(`DELETE FROM ${table} WHERE cs_key = $1`, [key]);
}

/**
 * Removes request-scoped index rows, which earlier versions wrote for `tx-resource` code systems
 * (run periodically; nothing writes them any more).
 */
export async function pruneInlineCodeSystems(db: Database): Promise<number> {
  const old = await db.query<{ resource_id: string }>(
    "SELECT resource_id FROM tx_code_system WHERE scope IS NOT NULL AND last_updated < now() - interval '1 hour'",
  );
  for (const { resource_id } of old.rows) await db.transaction((tx) => removeCodeSystemIndex(tx, resource_id));
  return old.rows.length;
}

/** The `publication` column: the code system's publication status as JSON, NULL when it states none. */
function publicationText(cs: CodeSystem): string | null {
  const p = publicationOf(cs);
  return p ? JSON.stringify(p) : null;
}
