import type { CodeSystemConceptProperty, Coding } from '@medplum/fhirtypes';
import { badRequest } from '../../fhir/outcome.js';
import type { Queryable } from '../../core/database.js';
import { BATCH_ROWS, bulkInsert } from './bulk-insert.js';
import { ClosureTooLarge } from '../providers/fhir/closure.js';
import { closureSize } from './hierarchy-store.js';
import { designationExtensions } from '../providers/concept-extensions.js';
import { propertyKinds, propertyRow, type DesignationRow, type PropertyRow } from '../providers/fhir/code-system-rows.js';
import { DESIGNATION_COLUMNS, PROPERTY_COLUMNS } from './index-columns.js';
import { announceCodeSystemChange } from '../providers/fhir/index-cache.js';
import { msg } from '../messages.js';
import type { CodeSystemInfo } from '../types.js';

/**
 * `CodeSystem/$import` (docs/terminology.md#import): adds concepts, properties and designations to the
 * index of an existing code system — typically one stored with `content: not-present`, whose
 * concepts live only in the index (its updates keep them, see code-system-store.ts). One
 * transaction; the code-system row is locked so concurrent imports get distinct concept ids.
 * New parent/child edges are added to the direct edges (the in-memory index computes the
 * closure from them); many edges at once are checked against the closure size limit.
 */

export interface ImportItems {
  concepts: Array<{ code: string; display?: string }>;
  /** `value` is the JSON value of the property; `type` its FHIR type when known. */
  properties: Array<{ code: string; property: string; value: unknown; type?: string }>;
  designations: Array<{ code: string; language?: string; use?: Coding; value: string; extension?: Array<{ url?: string }> }>;
}

/**
 * Above this many new edges the closure of the whole hierarchy is measured against the limit
 * (a few edges cannot make a sane hierarchy's closure explode; measuring costs a read of them all).
 */
const CHECKED_EDGES = 500;

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

  await addEdges(tx, cs.key, edges);
  if (edges.length > CHECKED_EDGES) await checkClosure(tx, cs.key, max + added.length);
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
 * Adds direct edges `[child, parent]` (docs/terminology.md#hierarchy-storage): the database keeps
 * no transitive closure to extend. Self-loops are dropped, edges already indexed kept once.
 */
async function addEdges(tx: Queryable, key: number, edges: Array<[number, number]>): Promise<void> {
  const seen = new Set<string>();
  const list: Array<[number, number]> = [];
  for (const [child, parent] of edges) {
    const k = `${child}:${parent}`;
    if (child === parent || seen.has(k)) continue;
    seen.add(k);
    list.push([child, parent]);
  }
  for (let from = 0; from < list.length; from += BATCH_ROWS) {
    const slice = list.slice(from, from + BATCH_ROWS);
    await tx.query(
      `INSERT INTO tx_closure (cs_key, descendant, ancestor, depth) SELECT $1, u.d, u.a, 1 FROM unnest($2::int[], $3::int[]) AS u(d, a)
       ON CONFLICT (cs_key, descendant, ancestor) DO NOTHING`,
      [key, slice.map((e) => e[0]), slice.map((e) => e[1])],
    );
  }
}

/** Refuses (400) a hierarchy of concepts 1..n whose closure has grown past the limit the in-memory index accepts. */
async function checkClosure(tx: Queryable, key: number, n: number): Promise<void> {
  const direct = await tx.query<{ descendant: number; ancestor: number }>('SELECT descendant, ancestor FROM tx_closure WHERE cs_key = $1', [key]);
  try {
    closureSize(n, direct.rows.map((r) => [r.descendant, r.ancestor]));
  } catch (err) {
    if (err instanceof ClosureTooLarge) throw badRequest('CodeSystem hierarchy is too large to index');
    throw err;
  }
}
