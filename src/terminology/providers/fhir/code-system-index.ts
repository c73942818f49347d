import type { Queryable } from '../../../core/database.js';
import { computeClosure } from './closure.js';
import type { CodeSystemRows, DesignationRow, PropertyRow } from './code-system-rows.js';
import type { Concept, Designation, StoredProperty, TermContext } from '../../types.js';

/**
 * One code-system version in memory (docs/terminology.md#in-memory-index): the hot path of
 * every terminology operation. Built from the database index (the source of truth) or straight
 * from a request-supplied CodeSystem; immutable once built.
 *
 * Concepts are addressed by their index id (1..n, document order). Per concept: code, display,
 * definition, status and flags in arrays; designations and stored properties as slices of one
 * array each (CSR: `start[id]..start[id+1]`); parents and children as sorted id arrays; and every
 * proper ancestor as a sorted id array, so "is A an ancestor of B" is a binary search in B's
 * ancestors — O(log depth·parents), whatever the number of paths.
 */


const INACTIVE = 1;
const ABSTRACT = 2;
const EXISTS = 4;

/** Rows of a code system as the index is built from them (concept ids may have gaps). */
export interface IndexSource {
  /** Highest concept id. */
  maxId: number;
  concepts: Iterable<Concept>;
  designations: Iterable<{ concept: number } & Designation>;
  properties: Iterable<{ concept: number } & StoredProperty>;
  /** Direct parent edges `[child, parent]`. */
  edges: Array<[number, number]>;
}

/** Shares equal strings and use codings among the objects an index keeps (see its constructor). */
class InternPool {
  /** Values up to this length are shared; longer ones (displays, definitions) are rarely equal. */
  static readonly SHORT = 40;
  private readonly strings = new Map<string, string>();
  private readonly uses = new Map<string, NonNullable<Designation['use']>>();

  text<T extends string | undefined>(s: T): T {
    if (s === undefined) return s;
    const kept = this.strings.get(s);
    if (kept !== undefined) return kept as T;
    this.strings.set(s, s);
    return s;
  }

  use(u: Designation['use']): Designation['use'] {
    if (u === undefined) return u;
    const key = `${u.system ?? ''}\u0000${u.code ?? ''}\u0000${u.display ?? ''}`;
    let kept = this.uses.get(key);
    if (kept === undefined) {
      kept = { ...(u.system !== undefined ? { system: this.text(u.system) } : {}), ...(u.code !== undefined ? { code: this.text(u.code) } : {}), ...(u.display !== undefined ? { display: this.text(u.display) } : {}) };
      this.uses.set(key, kept);
    }
    return kept;
  }
}

/** Groups items by concept id into a CSR layout, keeping their order within a concept. */
function csr<T extends { concept: number }>(maxId: number, items: T[]): { start: Int32Array; list: T[] } {
  const start = new Int32Array(maxId + 2);
  for (const it of items) start[it.concept + 1]++;
  for (let i = 1; i <= maxId + 1; i++) start[i] += start[i - 1];
  const fill = start.slice();
  const list = new Array<T>(items.length);
  for (const it of items) list[fill[it.concept]++] = it;
  return { start, list };
}

/** CSR of integer pairs `[key, value]`, each slice sorted ascending. */
function intCsr(maxId: number, count: number, key: (i: number) => number, value: (i: number) => number): { start: Int32Array; list: Int32Array } {
  const start = new Int32Array(maxId + 2);
  for (let i = 0; i < count; i++) start[key(i) + 1]++;
  for (let i = 1; i <= maxId + 1; i++) start[i] += start[i - 1];
  const fill = start.slice();
  const list = new Int32Array(count);
  for (let i = 0; i < count; i++) list[fill[key(i)]++] = value(i);
  for (let id = 1; id <= maxId; id++) if (start[id + 1] - start[id] > 1) list.subarray(start[id], start[id + 1]).sort();
  return { start, list };
}

export class CodeSystemIndex {
  readonly maxId: number;
  /** Estimated heap size in bytes (for the cache budget). */
  readonly bytes: number;
  private readonly codes: string[];
  private readonly displays: Array<string | undefined>;
  private readonly definitions: Array<string | undefined>;
  private readonly statuses: Array<string | undefined>;
  private readonly flags: Uint8Array;
  private readonly byCode = new Map<string, number>();
  private byLower: Map<string, number> | undefined;
  private readonly designationStart: Int32Array;
  /** Designations, one column per field (no object per designation: see the constructor). */
  private readonly designationColumns: { language: Array<string | undefined>; use: Array<Designation['use']>; value: string[]; extension: Array<Designation['extension']> };
  private readonly propertyStart: Int32Array;
  /** Stored properties, one column per field. */
  private readonly propertyColumns: { code: string[]; type: string[]; value: string[]; system: Array<string | undefined>; display: Array<string | undefined> };
  private readonly parentStart: Int32Array;
  private readonly parentList: Int32Array;
  private readonly childStart: Int32Array;
  private readonly childList: Int32Array;
  private readonly ancestorStart: Int32Array;
  private readonly ancestorList: Int32Array;
  /** Derived per-index answers (compiled filters), dropped with the index. */
  readonly memo = new Map<string, unknown>();

  constructor(source: IndexSource) {
    const n = source.maxId;
    this.maxId = n;
    this.codes = new Array<string>(n + 1);
    this.displays = new Array<string | undefined>(n + 1);
    this.definitions = new Array<string | undefined>(n + 1);
    this.statuses = new Array<string | undefined>(n + 1);
    this.flags = new Uint8Array(n + 1);
    let text = 0;
    const pool = new InternPool();
    for (const c of source.concepts) {
      this.codes[c.id] = c.code;
      this.displays[c.id] = c.display;
      this.definitions[c.id] = c.definition;
      this.statuses[c.id] = pool.text(c.status);
      this.flags[c.id] = EXISTS | (c.inactive ? INACTIVE : 0) | (c.abstract ? ABSTRACT : 0);
      // The lowest id wins a code (as `ORDER BY id` does in SQL).
      if (!this.byCode.has(c.code)) this.byCode.set(c.code, c.id);
      text += c.code.length + (c.display?.length ?? 0) + (c.definition?.length ?? 0);
    }
    // Designations and properties are kept as columns, with their repeated parts shared (the
    // same language, use coding, property code, type and short values come back in every row),
    // and made into objects when asked for: as one object each, plus their strings, a
    // SNOMED-size index was ~10 million small objects that every major GC marks (350k concepts:
    // heap 384 → 127 MB, a full GC 488 → 188 ms).
    const d = csr(n, [...source.designations]);
    this.designationStart = d.start;
    const nd = d.list.length;
    const dc = (this.designationColumns = { language: new Array<string | undefined>(nd), use: new Array<Designation['use']>(nd), value: new Array<string>(nd), extension: [] as Array<Designation['extension']> });
    d.list.forEach((x, i) => {
      dc.language[i] = pool.text(x.language);
      dc.use[i] = pool.use(x.use);
      dc.value[i] = x.value;
      if (x.extension) dc.extension[i] = x.extension;
      text += x.value.length;
    });
    const p = csr(n, [...source.properties]);
    this.propertyStart = p.start;
    const np = p.list.length;
    const pc = (this.propertyColumns = { code: new Array<string>(np), type: new Array<string>(np), value: new Array<string>(np), system: new Array<string | undefined>(np), display: new Array<string | undefined>(np) });
    p.list.forEach((x, i) => {
      pc.code[i] = pool.text(x.code);
      pc.type[i] = pool.text(x.type);
      pc.value[i] = x.value.length <= InternPool.SHORT ? pool.text(x.value) : x.value;
      pc.system[i] = pool.text(x.system);
      pc.display[i] = pool.text(x.display);
      text += x.value.length + x.code.length;
    });

    const edges = source.edges;
    const parents = intCsr(n, edges.length, (i) => edges[i][0], (i) => edges[i][1]);
    this.parentStart = parents.start;
    this.parentList = parents.list;
    const children = intCsr(n, edges.length, (i) => edges[i][1], (i) => edges[i][0]);
    this.childStart = children.start;
    this.childList = children.list;
    // Ancestors come grouped by descendant (computeClosure walks concepts in id order).
    const closure = computeClosure(n, edges);
    const ancestors = intCsr(n, closure.size, (i) => closure.descendant[i], (i) => closure.ancestor[i]);
    this.ancestorStart = ancestors.start;
    this.ancestorList = ancestors.list;

    const objects = (n + 1) * 5 + this.designationColumns.value.length + this.propertyColumns.value.length;
    this.bytes =
      text * 2 +
      objects * 48 +
      this.byCode.size * 64 +
      (this.parentList.length + this.childList.length + this.ancestorList.length) * 4 +
      (n + 2) * 4 * 5;
  }

  /** The id of a code (exact), or of the same code up to case when `caseInsensitive`; 0 = none. */
  idOf(code: string, caseInsensitive: boolean): number {
    const exact = this.byCode.get(code);
    if (exact !== undefined) return exact;
    if (!caseInsensitive) return 0;
    if (!this.byLower) {
      this.byLower = new Map();
      for (let id = 1; id <= this.maxId; id++) {
        if (!(this.flags[id] & EXISTS)) continue;
        const lower = this.codes[id].toLowerCase();
        if (!this.byLower.has(lower)) this.byLower.set(lower, id);
      }
    }
    return this.byLower.get(code.toLowerCase()) ?? 0;
  }

  has(id: number): boolean {
    return id > 0 && id <= this.maxId && (this.flags[id] & EXISTS) !== 0;
  }

  code(id: number): string {
    return this.codes[id];
  }

  display(id: number): string | undefined {
    return this.displays[id];
  }

  inactive(id: number): boolean {
    return (this.flags[id] & INACTIVE) !== 0;
  }

  abstract(id: number): boolean {
    return (this.flags[id] & ABSTRACT) !== 0;
  }

  /** The concept with this id (a fresh object). */
  concept(id: number): Concept {
    return {
      id,
      code: this.codes[id],
      display: this.displays[id],
      definition: this.definitions[id],
      inactive: this.inactive(id),
      abstract: this.abstract(id),
      status: this.statuses[id],
    };
  }

  designations(id: number): Designation[] {
    const dc = this.designationColumns;
    const out: Designation[] = [];
    for (let i = this.designationStart[id]; i < this.designationStart[id + 1]; i++) {
      const d: Designation = { language: dc.language[i], use: dc.use[i], value: dc.value[i] };
      const extension = dc.extension[i];
      if (extension) d.extension = extension;
      out.push(d);
    }
    return out;
  }

  properties(id: number): StoredProperty[] {
    const pc = this.propertyColumns;
    const out: StoredProperty[] = [];
    for (let i = this.propertyStart[id]; i < this.propertyStart[id + 1]; i++) {
      out.push({ code: pc.code[i], type: pc.type[i], value: pc.value[i], system: pc.system[i], display: pc.display[i] });
    }
    return out;
  }

  /** Direct parents, ascending ids. */
  parents(id: number): Int32Array {
    return this.parentList.subarray(this.parentStart[id], this.parentStart[id + 1]);
  }

  /** Direct children, ascending ids. */
  children(id: number): Int32Array {
    return this.childList.subarray(this.childStart[id], this.childStart[id + 1]);
  }

  /** Every proper ancestor, ascending ids. */
  ancestors(id: number): Int32Array {
    return this.ancestorList.subarray(this.ancestorStart[id], this.ancestorStart[id + 1]);
  }

  /** True when `ancestor` is a proper ancestor of `descendant` (binary search). */
  isAncestor(ancestor: number, descendant: number): boolean {
    if (descendant <= 0 || descendant > this.maxId) return false;
    let lo = this.ancestorStart[descendant];
    let hi = this.ancestorStart[descendant + 1] - 1;
    const list = this.ancestorList;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const v = list[mid];
      if (v === ancestor) return true;
      if (v < ancestor) lo = mid + 1;
      else hi = mid - 1;
    }
    return false;
  }

  /** Every proper descendant of `id` (walks children; each concept once). */
  descendants(id: number): number[] {
    const seen = new Uint8Array(this.maxId + 1);
    const out: number[] = [];
    const stack = [id];
    seen[id] = 1;
    while (stack.length > 0) {
      const current = stack.pop() as number;
      for (const c of this.children(current)) {
        if (seen[c]) continue;
        seen[c] = 1;
        out.push(c);
        stack.push(c);
      }
    }
    return out;
  }
}

/** The index of a request-supplied CodeSystem, from the same rows the database index gets. */
export function indexFromRows(rows: CodeSystemRows): CodeSystemIndex {
  const use = (d: DesignationRow): Designation['use'] =>
    d.useSystem || d.useCode
      ? { ...(d.useSystem ? { system: d.useSystem } : {}), ...(d.useCode ? { code: d.useCode } : {}), ...(d.useDisplay ? { display: d.useDisplay } : {}) }
      : undefined;
  return new CodeSystemIndex({
    maxId: rows.concepts.length,
    concepts: rows.concepts.map((c, i) => ({ ...c, id: i + 1 })),
    designations: rows.designations.map((d) => ({ concept: d.concept, language: d.language, use: use(d), value: d.value, ...(d.extension ? { extension: JSON.parse(d.extension) as Designation['extension'] } : {}) })),
    properties: rows.properties.map((p: PropertyRow) => ({ concept: p.concept, code: p.code, type: p.type, value: p.value, system: p.system, display: p.display })),
    edges: rows.edges,
  });
}

/** In-memory indexes of each request's request-supplied code systems, by their (negative) key. */
const requestIndexes = new WeakMap<TermContext, Map<number, CodeSystemIndex>>();

/** Registers the index of a request-supplied code system for the request. */
export function setRequestIndex(tc: TermContext, key: number, index: CodeSystemIndex): void {
  const map = requestIndexes.get(tc) ?? new Map<number, CodeSystemIndex>();
  map.set(key, index);
  requestIndexes.set(tc, map);
}

/** The index of a request-supplied code system of this request, if `key` is one. */
export function requestIndex(tc: TermContext, key: number): CodeSystemIndex | undefined {
  return requestIndexes.get(tc)?.get(key);
}

/**
 * Concepts read per statement while an index loads: bounds the memory of one result and, on
 * PGlite (which runs a statement and parses its result on the event loop), how long one
 * statement holds everything else up (~50 ms for this many concepts and their rows).
 */
const LOAD_CHUNK = 5_000;

/**
 * Reads the database index of code system `key` into memory, in id ranges. The caller runs it
 * in a `Database.readPass` (one snapshot on PostgreSQL even while an import runs; on PGlite
 * the caller reloads when the code system changed meanwhile — index-cache.ts).
 */
export async function loadIndex(tx: Queryable, key: number): Promise<CodeSystemIndex> {
  const maxId = (await tx.query<{ n: number }>('SELECT coalesce(max(id), 0)::int AS n FROM tx_concept WHERE cs_key = $1', [key])).rows[0].n;
  const concepts: Concept[] = [];
  const designations: Array<{ concept: number } & Designation> = [];
  const properties: Array<{ concept: number } & StoredProperty> = [];
  const edges: Array<[number, number]> = [];
  // Each slice comes back as ONE JSON text per table, parsed by JSON.parse: the drivers' row by
  // row decoding was most of a load's time (PGlite: ~60% of 33 s CPU for 350k concepts).
  const rowsOf = async <T>(columns: string, from: string, range: number[]): Promise<T[]> => {
    const r = await tx.query<{ j: string }>(`SELECT coalesce(json_agg(json_build_array(${columns})), '[]')::text AS j FROM ${from}`, range);
    return JSON.parse(r.rows[0].j) as T[];
  };
  for (let from = 1; from <= maxId; from += LOAD_CHUNK) {
    const range = [key, from, from + LOAD_CHUNK - 1];
    type ConceptRow = [number, string, string | null, string | null, boolean, boolean, string | null];
    for (const [id, code, display, definition, inactive, abstract, status] of await rowsOf<ConceptRow>(
      'id, code, display, definition, inactive, abstract, status',
      'tx_concept WHERE cs_key = $1 AND id BETWEEN $2 AND $3',
      range,
    )) {
      concepts.push({ id, code, display: display ?? undefined, definition: definition ?? undefined, inactive, abstract, status: status ?? undefined });
    }
    // No ORDER BY: within a concept, rows come in storage order, as the SQL read path returns them.
    type DesignationJson = [number, string | null, string | null, string | null, string | null, string, string | null];
    for (const [concept, language, use_system, use_code, use_display, value, extension] of await rowsOf<DesignationJson>(
      'concept, language, use_system, use_code, use_display, value, extension',
      'tx_designation WHERE cs_key = $1 AND concept BETWEEN $2 AND $3',
      range,
    )) {
      designations.push({ concept, ...designationOf({ language, use_system, use_code, use_display, value, extension }) });
    }
    type PropertyJson = [number, string, string, string, string | null, string | null];
    for (const [concept, code, type, value, system, display] of await rowsOf<PropertyJson>(
      'concept, code, type, value, system, display',
      'tx_concept_property WHERE cs_key = $1 AND concept BETWEEN $2 AND $3',
      range,
    )) {
      properties.push({ concept, code, type, value, system: system ?? undefined, display: display ?? undefined });
    }
    for (const edge of await rowsOf<[number, number]>('descendant, ancestor', 'tx_closure WHERE cs_key = $1 AND depth = 1 AND descendant BETWEEN $2 AND $3', range)) {
      edges.push(edge);
    }
  }
  return new CodeSystemIndex({ maxId, concepts, designations, properties, edges });
}

/** A designation as stored in `tx_designation`. */
export function designationOf(r: { language: string | null; use_system: string | null; use_code: string | null; use_display: string | null; value: string; extension?: string | null }): Designation {
  const use =
    r.use_system || r.use_code
      ? { ...(r.use_system ? { system: r.use_system } : {}), ...(r.use_code ? { code: r.use_code } : {}), ...(r.use_display ? { display: r.use_display } : {}) }
      : undefined;
  return { language: r.language ?? undefined, use, value: r.value, ...(r.extension ? { extension: parsedExtension(r.extension) } : {}) };
}

/**
 * Designation extensions parsed once per distinct text: a SNOMED CT edition gives most of its
 * 1.6 million designations one of a few extensions (their acceptability), which then share
 * one read-only object instead of one each.
 */
const extensionCache = new Map<string, Designation['extension']>();

function parsedExtension(text: string): Designation['extension'] {
  const known = extensionCache.get(text);
  if (known) return known;
  const parsed = JSON.parse(text) as Designation['extension'];
  if (text.length <= 512) {
    if (extensionCache.size >= 1000) extensionCache.delete(extensionCache.keys().next().value as string);
    extensionCache.set(text, parsed);
  }
  return parsed;
}
