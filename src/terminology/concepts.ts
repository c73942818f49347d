import { requestIndex, type CodeSystemIndex, type StoredProperty } from './code-system-index.js';
import * as sql from './concepts-sql.js';
import { terminologyCache } from './index-cache.js';
import type { CodeSystemInfo, Concept, Designation, TermContext } from './types.js';
import { splitCanonical } from './versions.js';

export type { StoredProperty } from './code-system-index.js';
export { CONCEPT_COLUMNS, toConcept } from './concepts-sql.js';

/**
 * Read side of the concept index: concepts by code (batched), designations, properties and
 * the direct neighbours in the hierarchy — answered from the in-memory index of the code
 * system version (docs/terminology.md#in-memory-index), loaded from the database index on first
 * use. `TermContext.sqlReference` answers from SQL instead (concepts-sql.ts, the reference the
 * equivalence test compares with).
 */

/** The in-memory index of `cs`: request-supplied, or the cached copy of the database index. */
export function indexOf(tc: TermContext, cs: CodeSystemInfo): Promise<CodeSystemIndex> {
  const inline = requestIndex(tc, cs.key);
  if (inline) return Promise.resolve(inline);
  return terminologyCache(tc.db).index(cs);
}

/**
 * Finds the concepts of `codes`. Exact matches win; in a case-insensitive system a code also
 * matches up to case (the lowest id). The map is keyed by the given code.
 */
export async function findConcepts(tc: TermContext, cs: CodeSystemInfo, codes: string[]): Promise<Map<string, Concept>> {
  if (tc.sqlReference) return sql.findConcepts(tc, cs, codes);
  const found = new Map<string, Concept>();
  if (codes.length === 0) return found;
  const index = await indexOf(tc, cs);
  for (const code of codes) {
    if (found.has(code)) continue;
    const id = index.idOf(code, !cs.caseSensitive);
    if (id > 0) found.set(code, index.concept(id));
  }
  return found;
}

/** One concept by code (see findConcepts). */
export async function findConcept(tc: TermContext, cs: CodeSystemInfo, code: string): Promise<Concept | undefined> {
  return (await findConcepts(tc, cs, [code])).get(code);
}

/** Concepts by id, in id order. */
export async function conceptsByIds(tc: TermContext, cs: CodeSystemInfo, ids: number[]): Promise<Concept[]> {
  if (tc.sqlReference) return sql.conceptsByIds(tc, cs, ids);
  if (ids.length === 0) return [];
  const index = await indexOf(tc, cs);
  return [...new Set(ids)].filter((id) => index.has(id)).sort((a, b) => a - b).map((id) => index.concept(id));
}

/** Indexes of the requested supplements of `cs` (their canonical names its url). */
async function supplementIndexes(tc: TermContext, cs: CodeSystemInfo): Promise<CodeSystemIndex[]> {
  const sups = tc.supplements.filter((s) => splitCanonical(s.supplements ?? '').url === cs.url);
  return Promise.all(sups.map((s) => indexOf(tc, s)));
}

/**
 * The designations of concepts (not the display itself), by concept id — including those of the
 * requested supplements of the code system, matched by code.
 */
export async function designationsOf(tc: TermContext, cs: CodeSystemInfo, ids: number[]): Promise<Map<number, Designation[]>> {
  if (tc.sqlReference) return sql.designationsOf(tc, cs, ids);
  const out = new Map<number, Designation[]>();
  if (ids.length === 0) return out;
  const index = await indexOf(tc, cs);
  const sups = await supplementIndexes(tc, cs);
  for (const id of ids) {
    if (out.has(id) || !index.has(id)) continue;
    const list = index.designations(id);
    for (const s of sups) {
      const sid = s.idOf(index.code(id), false);
      if (sid > 0) list.push(...s.designations(sid));
    }
    if (list.length > 0) out.set(id, list);
  }
  return out;
}

/** The stored properties of one concept (and those its requested supplements add). */
export async function propertiesOf(tc: TermContext, cs: CodeSystemInfo, id: number): Promise<StoredProperty[]> {
  if (tc.sqlReference) return sql.propertiesOf(tc, cs, id);
  const index = await indexOf(tc, cs);
  if (!index.has(id)) return [];
  const list = index.properties(id);
  for (const s of await supplementIndexes(tc, cs)) {
    const sid = s.idOf(index.code(id), false);
    if (sid > 0) list.push(...s.properties(sid));
  }
  return list;
}

/** Direct parents (`up`) or children of a concept, in id order. */
export async function neighbours(tc: TermContext, cs: CodeSystemInfo, id: number, up: boolean): Promise<Concept[]> {
  if (tc.sqlReference) return sql.neighbours(tc, cs, id, up);
  const index = await indexOf(tc, cs);
  if (!index.has(id)) return [];
  return [...(up ? index.parents(id) : index.children(id))].map((n) => index.concept(n));
}

/** True when `ancestor` is a proper ancestor of `descendant`. */
export async function isAncestor(tc: TermContext, cs: CodeSystemInfo, ancestor: number, descendant: number): Promise<boolean> {
  if (tc.sqlReference) return sql.isAncestor(tc, cs, ancestor, descendant);
  return (await indexOf(tc, cs)).isAncestor(ancestor, descendant);
}
