import { requestIndex, type CodeSystemIndex, type StoredProperty } from './code-system-index.js';
import * as sql from './sql-provider.js';
import { terminologyCache } from './index-cache.js';
import type { CodeSystemInfo, Concept, Designation, TermContext } from '../../types.js';
import { splitCanonical } from '../../versions.js';

export type { StoredProperty } from './code-system-index.js';
export { CONCEPT_COLUMNS, toConcept } from './sql-provider.js';

/**
 * Read side of the concept index: concepts by code (batched), designations, properties and
 * the direct neighbours in the hierarchy — answered from the in-memory index of the code
 * system version (docs/terminology.md#in-memory-index), loaded from the database index on first
 * use. Until that index is in memory these point reads answer from SQL (concepts-sql.ts, the
 * reference path, same ids and same answers) while it builds in the background, so no request
 * waits for the build of a large system; `TermContext.sqlReference` answers from SQL always
 * (the equivalence test compares the two).
 */

/** The in-memory index of `cs`: request-supplied, or the cached copy of the database index (waits for its build). */
export function indexOf(tc: TermContext, cs: CodeSystemInfo): Promise<CodeSystemIndex> {
  const inline = requestIndex(tc, cs.key);
  if (inline) return Promise.resolve(inline);
  return terminologyCache(tc.db).index(cs);
}

/**
 * The index to answer a point read from now, or undefined to answer from SQL: always under
 * `sqlReference`, and for a stored code system whose index is not in memory yet (its build is
 * started in the background). A request-supplied code system has no rows: always its index.
 */
function readyIndex(tc: TermContext, cs: CodeSystemInfo): CodeSystemIndex | undefined {
  const inline = requestIndex(tc, cs.key);
  if (inline) return inline;
  if (tc.sqlReference || cs.key <= 0) return undefined;
  return terminologyCache(tc.db).ready(cs);
}

/**
 * Finds the concepts of `codes`. Exact matches win; in a case-insensitive system a code also
 * matches up to case (the lowest id). The map is keyed by the given code.
 */
export async function findConcepts(tc: TermContext, cs: CodeSystemInfo, codes: string[]): Promise<Map<string, Concept>> {
  const index = readyIndex(tc, cs);
  if (!index) return sql.findConcepts(tc, cs, codes);
  const found = new Map<string, Concept>();
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
  const index = readyIndex(tc, cs);
  if (!index) return sql.conceptsByIds(tc, cs, ids);
  return [...new Set(ids)].filter((id) => index.has(id)).sort((a, b) => a - b).map((id) => index.concept(id));
}

/** Indexes of the requested supplements of `cs` (their canonical names its url). */
async function supplementIndexes(tc: TermContext, cs: CodeSystemInfo): Promise<CodeSystemIndex[]> {
  return Promise.all(supplementsOf(tc, cs).map((s) => indexOf(tc, s)));
}

/** A supplement's canonical as designations cite it (`url|version`). */
export function supplementCanonical(s: CodeSystemInfo): string {
  return s.version ? `${s.url}|${s.version}` : s.url;
}

/**
 * The designations of concepts (not the display itself), by concept id — including those of the
 * requested supplements of the code system, matched by code.
 */
export async function designationsOf(tc: TermContext, cs: CodeSystemInfo, ids: number[]): Promise<Map<number, Designation[]>> {
  const index = readyIndex(tc, cs);
  if (!index) return sql.designationsOf(tc, cs, ids);
  const out = new Map<number, Designation[]>();
  const supplements = supplementsOf(tc, cs);
  const sups = await supplementIndexes(tc, cs);
  for (const id of ids) {
    if (out.has(id) || !index.has(id)) continue;
    const list = index.designations(id);
    sups.forEach((s, i) => {
      const sid = s.idOf(index.code(id), false);
      if (sid > 0) list.push(...s.designations(sid).map((d) => ({ ...d, source: supplementCanonical(supplements[i]) })));
    });
    if (list.length > 0) out.set(id, list);
  }
  return out;
}

/** The stored properties of one concept (and those its requested supplements add). */
export async function propertiesOf(tc: TermContext, cs: CodeSystemInfo, id: number): Promise<StoredProperty[]> {
  const index = readyIndex(tc, cs);
  if (!index) return sql.propertiesOf(tc, cs, id);
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
  const index = readyIndex(tc, cs);
  if (!index) return sql.neighbours(tc, cs, id, up);
  if (!index.has(id)) return [];
  return [...(up ? index.parents(id) : index.children(id))].map((n) => index.concept(n));
}

/** True when `ancestor` is a proper ancestor of `descendant`. */
export async function isAncestor(tc: TermContext, cs: CodeSystemInfo, ancestor: number, descendant: number): Promise<boolean> {
  const index = readyIndex(tc, cs);
  if (!index) return sql.isAncestor(tc, cs, ancestor, descendant);
  return index.isAncestor(ancestor, descendant);
}

/** The stored properties (and those of the requested supplements) of several concepts, by concept id. */
export async function propertiesOfConcepts(tc: TermContext, cs: CodeSystemInfo, ids: number[]): Promise<Map<number, StoredProperty[]>> {
  const out = new Map<number, StoredProperty[]>();
  for (const id of new Set(ids)) out.set(id, await propertiesOf(tc, cs, id));
  return out;
}

/**
 * For each of `ids`, its nearest ancestors that are themselves among `ids` (walking up the
 * direct parents, in id order): what nests an expansion's `contains` (docs/terminology.md#expand).
 */
export async function ancestorsWithin(tc: TermContext, cs: CodeSystemInfo, ids: number[]): Promise<Map<number, number[]>> {
  const out = new Map<number, number[]>();
  if (ids.length === 0) return out;
  const wanted = new Set(ids);
  const parentsOf = new Map<number, number[]>();
  const parents = async (id: number) => {
    let p = parentsOf.get(id);
    if (!p) parentsOf.set(id, (p = (await neighbours(tc, cs, id, true)).map((c) => c.id)));
    return p;
  };
  for (const id of wanted) {
    const seen = new Set<number>([id]);
    let level = await parents(id);
    while (level.length > 0) {
      const hits = level.filter((x) => wanted.has(x));
      if (hits.length > 0) {
        out.set(id, hits);
        break;
      }
      const next: number[] = [];
      for (const x of level) {
        for (const y of await parents(x)) {
          if (seen.has(y)) continue;
          seen.add(y);
          next.push(y);
        }
      }
      level = next;
    }
  }
  return out;
}

/** The requested supplements that apply to `cs` (for `used-supplement`). */
export function supplementsOf(tc: TermContext, cs: CodeSystemInfo): CodeSystemInfo[] {
  return tc.supplements.filter((s) => splitCanonical(s.supplements ?? '').url === cs.url);
}
