import type { CodeSystemInfo, Concept, Designation, StoredProperty, TermContext } from '../../types.js';
import { textFilterMatcher } from '../filters.js';
import { supplementCanonical, supplementsOf, type CodeSystemProvider, type ConceptSelection } from '../provider.js';
import { requestIndex, type CodeSystemIndex } from './code-system-index.js';
import { compileInclude } from './index-filters.js';
import { terminologyCache } from './index-cache.js';
import { storedDesignations, storedProperties } from './sql-provider.js';

/**
 * The code systems stored as FHIR resources (and those a request supplies inline), answered from
 * the in-memory index of one version (docs/terminology.md#in-memory-index): point reads are array
 * probes, subsumption a binary search in the ancestors, and an include a predicate compiled once
 * per index (index-filters.ts). Its SQL twin, sql-provider.ts, gives the same ids and answers.
 */

/**
 * While an include is enumerated, the event loop is given back whenever this many milliseconds
 * have passed since it last was (checked every 1,024 ids): a request that arrives meanwhile
 * needs several turns of the loop (token check, database round trips), each at most one slice
 * away.
 */
const SLICE_MS = 10;

/**
 * Most concepts whose designations are read from the database while a persisted index reads
 * its own (a `$lookup`, a page of an expansion); a question about more waits for the index.
 */
const STORED_DESIGNATIONS_AT_MOST = 1_000;

/** The in-memory index of `cs`: request-supplied, or the cached copy of the database index (waits for its build). */
export function indexOf(tc: TermContext, cs: CodeSystemInfo): Promise<CodeSystemIndex> {
  const inline = requestIndex(tc, cs.key);
  if (inline) return Promise.resolve(inline);
  return terminologyCache(tc.db).index(cs);
}

export class IndexProvider implements CodeSystemProvider {
  constructor(
    private readonly tc: TermContext,
    readonly cs: CodeSystemInfo,
    private readonly index: CodeSystemIndex,
  ) {}

  /** The lowest id wins a code; in a case-insensitive system also up to case. */
  async findConcepts(codes: string[]): Promise<Map<string, Concept>> {
    const { index } = this;
    const insensitive = !this.cs.caseSensitive;
    const found = new Map<string, Concept>();
    for (const code of codes) {
      if (found.has(code)) continue;
      const id = index.idOf(code, insensitive);
      if (id > 0) found.set(code, index.concept(id));
    }
    return found;
  }

  async conceptsByIds(ids: number[]): Promise<Concept[]> {
    const { index } = this;
    return [...new Set(ids)].filter((id) => index.has(id)).sort((a, b) => a - b).map((id) => index.concept(id));
  }

  /**
   * Designations of the concepts and of their namesakes (same code) in the requested
   * supplements. While a persisted index reads its designations in the background (the largest
   * part of its snapshot: docs/terminology.md#persisted-indexes), those of a few concepts are
   * read from the database — the rows the index holds, in its order — rather than waiting.
   */
  async designations(ids: number[]): Promise<Map<number, Designation[]>> {
    const { index } = this;
    const out = new Map<number, Designation[]>();
    const supplements = supplementsOf(this.tc, this.cs);
    const sups = await this.supplementIndexes();
    for (const s of sups) await s.whenLoaded('designations');
    let stored: Map<number, Designation[]> | undefined;
    if (!index.loaded('designations')) {
      if (ids.length <= STORED_DESIGNATIONS_AT_MOST) stored = await storedDesignations(this.tc.db, this.cs.key, ids.filter((id) => index.has(id)));
      else await index.whenLoaded('designations');
    }
    for (const id of ids) {
      if (out.has(id) || !index.has(id)) continue;
      const list = stored ? [...(stored.get(id) ?? [])] : index.designations(id);
      sups.forEach((s, i) => {
        const sid = s.idOf(index.code(id), false);
        if (sid > 0) list.push(...s.designations(sid).map((d) => ({ ...d, source: supplementCanonical(supplements[i]) })));
      });
      if (list.length > 0) out.set(id, list);
    }
    return out;
  }

  /** The stored properties, then those of its namesakes in the supplements; like designations, from the database while a persisted index reads them. */
  async properties(id: number): Promise<StoredProperty[]> {
    const { index } = this;
    if (!index.has(id)) return [];
    const list = index.loaded('properties') ? index.properties(id) : await storedProperties(this.tc.db, this.cs.key, id);
    for (const s of await this.supplementIndexes()) {
      const sid = s.idOf(index.code(id), false);
      if (sid === 0) continue;
      await s.whenLoaded('properties');
      list.push(...s.properties(sid));
    }
    return list;
  }

  async neighbours(id: number, up: boolean): Promise<Concept[]> {
    const { index } = this;
    if (!index.has(id)) return [];
    return [...(up ? index.parents(id) : index.children(id))].map((n) => index.concept(n));
  }

  /** Answered at once: until a persisted index has read its ancestors, by a walk up the parents. */
  async isAncestor(ancestor: number, descendant: number): Promise<boolean> {
    const { index } = this;
    return index.loaded('ancestors') ? index.isAncestor(ancestor, descendant) : index.reachesUp(ancestor, descendant);
  }

  async selected(selection: ConceptSelection, ids: number[]): Promise<Set<number>> {
    const match = await compileInclude(this.tc, this.cs, this.index, selection.include, selection.path, selection.activeOnly);
    return new Set(ids.filter(match));
  }

  /**
   * The compiled include, the text filter and `within`, tested id by id; a whole-system pass
   * yields to the event loop every SLICE_MS, so a large expansion never holds other requests
   * up for long (docs/terminology.md#limits).
   */
  async enumerate(selection: ConceptSelection, within?: number[]): Promise<number[]> {
    const { index } = this;
    const match = await compileInclude(this.tc, this.cs, index, selection.include, selection.path, selection.activeOnly);
    const matches = selection.text ? textFilterMatcher(selection.text) : undefined;
    if (selection.text) await index.whenLoaded('designations');
    const textMatch = (id: number) => !matches || matches(index.code(id), [index.display(id) ?? '', ...index.designations(id).map((d) => d.value)]);
    const out: number[] = [];
    if (within) {
      for (const id of [...new Set(within)].sort((a, b) => a - b)) if (index.has(id) && match(id) && textMatch(id)) out.push(id);
      return out;
    }
    let sliceStart = performance.now();
    for (let id = 1; id <= index.maxId; id++) {
      if ((id & 1023) === 0 && performance.now() - sliceStart > SLICE_MS) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        sliceStart = performance.now();
      }
      if (index.has(id) && match(id) && textMatch(id)) out.push(id);
    }
    return out;
  }

  /** Indexes of the requested supplements of the code system. */
  private supplementIndexes(): Promise<CodeSystemIndex[]> {
    return Promise.all(supplementsOf(this.tc, this.cs).map((s) => indexOf(this.tc, s)));
  }
}
