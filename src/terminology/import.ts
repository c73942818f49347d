import type { CodeSystemConceptProperty, Coding } from '@medplum/fhirtypes';
import { badRequest } from '../fhir/outcome.js';
import type { Queryable } from '../core/database.js';
import { bulkInsert } from './bulk-insert.js';
import { writeHierarchy } from './hierarchy-store.js';
import { DESIGNATION_COLUMNS, PROPERTY_COLUMNS, designationExtensions, propertyKinds, propertyRow, type DesignationRow, type PropertyRow } from './code-system-rows.js';
import { announceCodeSystemChange } from './index-cache.js';
import { msg } from './messages.js';
import type { CodeSystemInfo } from './types.js';

/**
 * `CodeSystem/$import` (docs/terminology.md#import): adds concepts, properties and designations to the
 * index of an existing code system — typically one stored with `content: not-present`, whose
 * concepts live only in the index (its updates keep them, see code-system-store.ts). One
 * transaction; the code-system row is locked so concurrent imports get distinct concept ids.
 * New parent/child edges extend the closure incrementally (all descendants of the child × all
 * ancestors of the parent); many edges at once recompute it.
 */

export interface ImportItems {
  concepts: Array<{ code: string; display?: string }>;
  /** `value` is the JSON value of the property; `type` its FHIR type when known. */
  properties: Array<{ code: string; property: string; value: unknown; type?: string }>;
  designations: Array<{ code: string; language?: string; use?: Coding; value: string; extension?: Array<{ url?: string }> }>;
}

/** Above this many new edges the closure is recomputed rather than extended edge by edge. */
const INCREMENTAL_EDGES = 500;

/** Imports `items` into `cs` inside transaction `tx`; returns the number of concepts added. */
export async function importIntoCodeSystem(tx: Queryable, cs: CodeSystemInfo, items: ImportItems): Promise<number> {
  await tx.query('SELECT cs_key FROM tx_code_system WHERE cs_key = $1 FOR UPDATE', [cs.key]);
  await announceCodeSystemChange(tx, cs.resourceId);
  const codes = [...new Set([...items.concepts.map((c) => c.code), ...items.properties.map((p) => p.code), ...items.designations.map((d) => d.code)])];
  const ids = new Map<string, number>();
  const known = await tx.query<{ id: number; code: string }>('SELECT id, code FROM tx_concept WHERE cs_key = $1 AND code = ANY($2::text[])', [cs.key, codes]);
  for (const r of known.rows) ids.set(r.code, r.id);
  const max = (await tx.query<{ n: number }>('SELECT coalesce(max(id), 0)::int AS n FROM tx_concept WHERE cs_key = $1', [cs.key])).rows[0].n;

  // Concepts: new ones appended, known ones get the display given.
  const added: Array<{ id: number; code: string; display?: string }> = [];
  for (const c of items.concepts) {
    if (ids.has(c.code)) {
      if (c.display) await tx.query('UPDATE tx_concept SET display = $3 WHERE cs_key = $1 AND id = $2', [cs.key, ids.get(c.code), c.display]);
      continue;
    }
    const id = max + added.length + 1;
    ids.set(c.code, id);
    added.push({ id, code: c.code, display: c.display });
  }
  const idOf = (code: string) => {
    const id = ids.get(code);
    if (id === undefined) throw badRequest(msg.codeNotInSystem(code, cs.url));
    return id;
  };
  await bulkInsert(
    tx,
    'tx_concept',
    { cs_key: { type: 'int', value: cs.key } },
    [
      { name: 'id', type: 'int', value: (r: (typeof added)[number]) => r.id },
      { name: 'code', type: 'text', value: (r) => r.code },
      { name: 'code_lower', type: 'text', value: (r) => r.code.toLowerCase() },
      { name: 'display', type: 'text', value: (r) => r.display },
    ],
    added.length,
    (i) => added[i],
  );

  // Properties: hierarchy edges, concept flags, stored values.
  const kind = propertyKinds(cs.propertyDefs);
  const declared = new Map(cs.propertyDefs.map((p) => [p.code, p.type]));
  const edges: Array<[number, number]> = [];
  const rows: PropertyRow[] = [];
  for (const p of items.properties) {
    const id = idOf(p.code);
    const k = kind(p.property);
    if (k === 'parent' || k === 'child') {
      const other = idOf(String((p.value as Coding)?.code ?? p.value));
      edges.push(k === 'parent' ? [id, other] : [other, id]);
      continue;
    }
    const row = propertyRow(id, { code: p.property, ...valueOf(p.value, p.type ?? declared.get(p.property)) });
    if (!row) throw badRequest(`Property ${p.property} of '${p.code}' has no usable value`);
    rows.push(row);
    if (k === 'inactive' && row.value === 'true') await tx.query('UPDATE tx_concept SET inactive = true WHERE cs_key = $1 AND id = $2', [cs.key, id]);
    if (k === 'notSelectable' && row.value === 'true') await tx.query('UPDATE tx_concept SET abstract = true WHERE cs_key = $1 AND id = $2', [cs.key, id]);
    if (k === 'status') {
      await tx.query("UPDATE tx_concept SET status = $3, inactive = inactive OR $3 IN ('retired', 'inactive') WHERE cs_key = $1 AND id = $2", [cs.key, id, row.value]);
    }
  }
  await bulkInsert(
    tx,
    'tx_concept_property',
    { cs_key: { type: 'int', value: cs.key } },
    PROPERTY_COLUMNS,
    rows.length,
    (i) => rows[i],
  );
  const designations: DesignationRow[] = items.designations.map((d) => ({
    concept: idOf(d.code),
    language: d.language,
    useSystem: d.use?.system,
    useCode: d.use?.code,
    useDisplay: d.use?.display,
    value: d.value,
    extension: designationExtensions(d.extension),
  }));
  await bulkInsert(
    tx,
    'tx_designation',
    { cs_key: { type: 'int', value: cs.key } },
    DESIGNATION_COLUMNS,
    designations.length,
    (i) => designations[i],
  );

  if (edges.length > INCREMENTAL_EDGES) await recomputeClosure(tx, cs.key, max + added.length, edges);
  else for (const [child, parent] of edges) await addEdge(tx, cs.key, child, parent);
  await tx.query('UPDATE tx_code_system SET concept_count = concept_count + $2 WHERE cs_key = $1', [cs.key, added.length]);
  return added.length;
}

/** A property value as `CodeSystem.concept.property` would carry it, typed by declaration or shape. */
function valueOf(value: unknown, type: string | undefined): Partial<CodeSystemConceptProperty> {
  if (typeof value === 'boolean') return { valueBoolean: value };
  if (typeof value === 'number') return Number.isInteger(value) && type !== 'decimal' ? { valueInteger: value } : { valueDecimal: value };
  if (value && typeof value === 'object') return { valueCoding: value };
  const text = String(value);
  switch (type) {
    case 'string':
      return { valueString: text };
    case 'dateTime':
      return { valueDateTime: text };
    case 'boolean':
      return { valueBoolean: text === 'true' };
    default:
      return { valueCode: text };
  }
}

/**
 * Adds one edge (docs/terminology.md#hierarchy-storage): the direct edge, and the parent with
 * its ancestors added to the ancestor arrays of the child and of every descendant of the child
 * (found by walking the direct edges down). A concept is never its own ancestor (cycles).
 */
async function addEdge(tx: Queryable, key: number, child: number, parent: number): Promise<void> {
  if (child === parent) return;
  const direct = await tx.query(
    'INSERT INTO tx_closure (cs_key, descendant, ancestor, depth) VALUES ($1, $2, $3, 1) ON CONFLICT (cs_key, descendant, ancestor) DO NOTHING',
    [key, child, parent],
  );
  if (direct.rowCount === 0) return;
  await tx.query(
    `WITH RECURSIVE up AS (
       SELECT array_append(coalesce((SELECT ancestors FROM tx_ancestors WHERE cs_key = $1 AND concept = $3), '{}'::int[]), $3) AS a
     ), targets(concept) AS (
       SELECT $2::int UNION SELECT h.descendant FROM tx_closure h JOIN targets t ON h.cs_key = $1 AND h.ancestor = t.concept
     )
     INSERT INTO tx_ancestors (cs_key, concept, ancestors)
     SELECT $1, t.concept, (SELECT array_agg(DISTINCT x ORDER BY x) FROM unnest((SELECT a FROM up)) x WHERE x <> t.concept) FROM targets t
     ON CONFLICT (cs_key, concept) DO UPDATE SET ancestors =
       (SELECT array_agg(DISTINCT x ORDER BY x) FROM unnest(tx_ancestors.ancestors || EXCLUDED.ancestors) x WHERE x <> tx_ancestors.concept)`,
    [key, child, parent],
  );
}

/** Rebuilds the hierarchy from the direct edges already indexed plus `added`. */
async function recomputeClosure(tx: Queryable, key: number, n: number, added: Array<[number, number]>): Promise<void> {
  const direct = await tx.query<{ descendant: number; ancestor: number }>('SELECT descendant, ancestor FROM tx_closure WHERE cs_key = $1 AND depth = 1', [key]);
  const seen = new Set<string>();
  const edges: Array<[number, number]> = [];
  for (const e of [...direct.rows.map((r) => [r.descendant, r.ancestor] as [number, number]), ...added]) {
    const k = `${e[0]}:${e[1]}`;
    if (e[0] === e[1] || seen.has(k)) continue;
    seen.add(k);
    edges.push(e);
  }
  await tx.query('DELETE FROM tx_closure WHERE cs_key = $1', [key]);
  await tx.query('DELETE FROM tx_ancestors WHERE cs_key = $1', [key]);
  await writeHierarchy(tx, key, n, edges);
}
