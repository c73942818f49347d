import type { Queryable } from '../../../core/database.js';
import { ancestorListSteps } from './closure.js';
import { finish, inTurns, type Steps } from './steps.js';
import type { CodeSystemRows, DesignationRow, PropertyRow } from './code-system-rows.js';
import type { Concept, Designation, StoredProperty, TermContext } from '../../types.js';
import { bytePart, CodeTable, IntBuffer, intPart, Lazy, PooledColumn, PooledColumnBuilder, TextColumn, TextColumnBuilder } from './flat-columns.js';
import type { PartSource, SnapshotParts } from './snapshot-format.js';

/**
 * One code-system version in memory (docs/terminology.md#in-memory-index): the hot path of
 * every terminology operation. Built from the database index (the source of truth) or straight
 * from a request-supplied CodeSystem; immutable once built.
 *
 * Concepts are addressed by their index id (1..n, document order). Per concept: code, display,
 * definition and status in flat columns (one string per column: flat-columns.ts), flags in a
 * byte array, codes found through a hash table of ids; designations and stored properties as
 * slices of flat columns (CSR: `start[id]..start[id+1]`); parents and children as sorted id
 * arrays; and every proper ancestor as a sorted id array, so "is A an ancestor of B" is a
 * binary search in B's ancestors — O(log depth·parents), whatever the number of paths. Being
 * typed arrays and a few strings, an index is written to the database as it is and read back
 * without rebuilding (index-snapshot.ts).
 */

const INACTIVE = 1;
const ABSTRACT = 2;
const EXISTS = 4;

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

/** Every column of an index: what it is built into and what a snapshot holds (flat-columns.ts). */
interface IndexColumns {
  maxId: number;
  codes: TextColumn;
  displays: TextColumn;
  definitions: TextColumn;
  statuses: PooledColumn<string | undefined>;
  flags: Uint8Array;
  byCode: CodeTable;
  /** Read when first needed from a snapshot (the largest parts; a `$subsumes` never needs them). */
  designations: Lazy<DesignationColumns>;
  /** Read when first needed from a snapshot (a point read answers from the database meanwhile: index-provider.ts). */
  properties: Lazy<PropertyColumns>;
  parentStart: Int32Array;
  parentList: Int32Array;
  childStart: Int32Array;
  childList: Int32Array;
  /** Read when first needed from a snapshot (only ancestry questions need them). */
  ancestors: Lazy<{ start: Int32Array; list: Int32Array }>;
}

interface PropertyColumns {
  start: Int32Array;
  code: PooledColumn<string>;
  type: PooledColumn<string>;
  value: TextColumn;
  system: PooledColumn<string | undefined>;
  display: PooledColumn<string | undefined>;
}

interface DesignationColumns {
  start: Int32Array;
  language: PooledColumn<string | undefined>;
  use: PooledColumn<Designation['use']>;
  value: TextColumn;
  extension: PooledColumn<Designation['extension']>;
}

/** Use codings told apart by their content (each distinct one kept once, shared by its rows). */
const useKey = (u: Designation['use']): string | undefined => (u === undefined ? undefined : `${u.system ?? ''}\u0000${u.code ?? ''}\u0000${u.display ?? ''}`);

/**
 * Builds an index from its rows, appended in ascending concept order (ids may have gaps;
 * within a concept, designations and properties keep the order they are given in): straight
 * into the columns, without an object per row first — the index of a LOINC or SNOMED CT
 * release is millions of rows (docs/terminology.md#in-memory-index).
 */
export class IndexBuilder {
  /** The next id whose concept columns are written. */
  private next = 0;
  private readonly codes = new TextColumnBuilder();
  private readonly displays = new TextColumnBuilder();
  private readonly definitions = new TextColumnBuilder();
  private readonly statuses = new PooledColumnBuilder<string | undefined>();
  private readonly flags: Uint8Array;
  private readonly designationCount: Int32Array;
  private lastDesignation = 0;
  private readonly designation = {
    language: new PooledColumnBuilder<string | undefined>(),
    // Designations and properties are columns with their repeated parts pooled (the same
    // language, use coding, property code and type come back in every row), made into objects
    // when asked for: as one object each, plus their strings, a SNOMED-size index was ~10
    // million small objects that every major GC marks.
    use: new PooledColumnBuilder<Designation['use']>(useKey),
    value: new TextColumnBuilder(),
    extension: new PooledColumnBuilder<Designation['extension']>(),
  };
  private readonly propertyCount: Int32Array;
  private lastProperty = 0;
  private readonly property = {
    code: new PooledColumnBuilder<string>(),
    type: new PooledColumnBuilder<string>(),
    value: new TextColumnBuilder(),
    system: new PooledColumnBuilder<string | undefined>(),
    display: new PooledColumnBuilder<string | undefined>(),
  };
  private readonly children = new IntBuffer();
  private readonly parents = new IntBuffer();

  constructor(readonly maxId: number) {
    this.flags = new Uint8Array(maxId + 1);
    this.designationCount = new Int32Array(maxId + 2);
    this.propertyCount = new Int32Array(maxId + 2);
  }

  private fillTo(id: number): void {
    for (; this.next < id; this.next++) {
      this.codes.add(undefined);
      this.displays.add(undefined);
      this.definitions.add(undefined);
      this.statuses.add(undefined);
    }
  }

  private checkId(id: number, after: number, what: string): void {
    if (!(id >= after && id <= this.maxId)) throw new RangeError(`index rows out of order: ${what} of concept ${id} after ${after}, ids up to ${this.maxId}`);
  }

  concept(c: Concept): void {
    this.checkId(c.id, Math.max(1, this.next), 'the concept');
    this.fillTo(c.id);
    this.codes.add(c.code);
    this.displays.add(c.display);
    this.definitions.add(c.definition);
    this.statuses.add(c.status);
    this.flags[c.id] = EXISTS | (c.inactive ? INACTIVE : 0) | (c.abstract ? ABSTRACT : 0);
    this.next = c.id + 1;
  }

  designationOf(concept: number, d: Designation): void {
    this.checkId(concept, Math.max(1, this.lastDesignation), 'a designation');
    this.lastDesignation = concept;
    this.designationCount[concept + 1]++;
    this.designation.language.add(d.language);
    this.designation.use.add(d.use);
    this.designation.value.add(d.value);
    this.designation.extension.add(d.extension);
  }

  propertyOf(concept: number, p: StoredProperty): void {
    this.checkId(concept, Math.max(1, this.lastProperty), 'a property');
    this.lastProperty = concept;
    this.propertyCount[concept + 1]++;
    this.property.code.add(p.code);
    this.property.type.add(p.type);
    this.property.value.add(p.value);
    this.property.system.add(p.system);
    this.property.display.add(p.display);
  }

  /** A direct parent edge (any order). */
  edge(child: number, parent: number): void {
    this.children.push(child);
    this.parents.push(parent);
  }

  /** The index, built at once (a request-supplied code system: small). */
  build(): CodeSystemIndex {
    return finish(this.steps());
  }

  /**
   * The index, built a piece at a time with the event loop let go between pieces (a few
   * milliseconds to some tens each): a release's build is about a second of work (SNOMED CT,
   * 370k concepts), which would otherwise hold every request for that long.
   */
  buildInTurns(): Promise<CodeSystemIndex> {
    return inTurns(this.steps());
  }

  private *steps(): Steps<CodeSystemIndex> {
    const n = this.maxId;
    this.fillTo(n + 1);
    const { flags } = this;
    const codes = this.codes.finish();
    const displays = this.displays.finish();
    const definitions = this.definitions.finish();
    yield;
    const byCode = CodeTable.of(codes, n, (id) => (flags[id] & EXISTS) !== 0);
    yield;
    const prefixSum = (counts: Int32Array) => {
      for (let i = 1; i <= n + 1; i++) counts[i] += counts[i - 1];
      return counts;
    };
    const child = this.children.finish();
    const parent = this.parents.finish();
    const parents = intCsr(n, child.length, (i) => child[i], (i) => parent[i]);
    yield;
    const children = intCsr(n, child.length, (i) => parent[i], (i) => child[i]);
    yield;
    const d = this.designation;
    const designations = { start: prefixSum(this.designationCount), language: d.language.finish(), use: d.use.finish(), value: d.value.finish(), extension: d.extension.finish() };
    yield;
    const p = this.property;
    const properties = { start: prefixSum(this.propertyCount), code: p.code.finish(), type: p.type.finish(), value: p.value.finish(), system: p.system.finish(), display: p.display.finish() };
    yield;
    const ancestors = yield* ancestorListSteps(n, parents.start, parents.list);
    return new CodeSystemIndex({
      maxId: n,
      codes,
      displays,
      definitions,
      statuses: this.statuses.finish(),
      flags,
      byCode,
      designations: Lazy.of(designations),
      properties: Lazy.of(properties),
      parentStart: parents.start,
      parentList: parents.list,
      childStart: children.start,
      childList: children.list,
      ancestors: Lazy.of(ancestors),
    });
  }
}

const TEXT_COLUMNS = ['codes', 'displays', 'definitions'] as const;
const ARRAYS = ['parentStart', 'parentList', 'childStart', 'childList'] as const;
const DESIGNATION_COLUMNS = ['language', 'use', 'value', 'extension'] as const;
const PROPERTY_COLUMNS = ['code', 'type', 'value', 'system', 'display'] as const;

/** The parts of text column `name` (TextColumn.save) or of pooled column `name` (PooledColumn.save). */
const columnParts = (name: string, text: boolean) => (text ? [`${name}.text`, `${name}.ends`] : [`${name}.values`, `${name}.at`]);

/** The property columns of a snapshot (`propertyStart`, `property.*`). */
function propertiesOf(parts: PartSource): PropertyColumns {
  return {
    start: intPart(parts, 'propertyStart'),
    code: PooledColumn.load(parts, 'property.code'),
    type: PooledColumn.load(parts, 'property.type'),
    value: TextColumn.load(parts, 'property.value'),
    system: PooledColumn.load(parts, 'property.system'),
    display: PooledColumn.load(parts, 'property.display'),
  };
}

/** The designation columns of a snapshot (`designationStart`, `designation.*`). */
function designationsOf(parts: PartSource): DesignationColumns {
  return {
    start: intPart(parts, 'designationStart'),
    language: PooledColumn.load(parts, 'designation.language'),
    use: PooledColumn.load(parts, 'designation.use'),
    value: TextColumn.load(parts, 'designation.value'),
    extension: PooledColumn.load(parts, 'designation.extension'),
  };
}

/** The parts an index reads only when first needed (index-cache.ts reads them in the background after it opens one). */
export const LAZY_PARTS = {
  properties: ['propertyStart', ...PROPERTY_COLUMNS.flatMap((k) => columnParts(`property.${k}`, k === 'value'))],
  designations: ['designationStart', ...DESIGNATION_COLUMNS.flatMap((k) => columnParts(`designation.${k}`, k === 'value'))],
  ancestors: ['ancestorStart', 'ancestorList'],
};

export class CodeSystemIndex {
  readonly maxId: number;
  /** Estimated heap size in bytes (for the cache budget). */
  readonly bytes: number;
  private readonly c: IndexColumns;
  private byLower: Map<string, number> | undefined;
  /** Derived per-index answers (compiled filters), dropped with the index. */
  readonly memo = new Map<string, unknown>();

  constructor(c: IndexColumns) {
    this.c = c;
    this.maxId = c.maxId;
    this.bytes =
      [c.codes, c.displays, c.definitions].reduce((n, t) => n + t.bytes, 0) +
      c.statuses.bytes +
      c.flags.byteLength +
      c.byCode.bytes +
      ARRAYS.reduce((n, a) => n + c[a].byteLength, 0) +
      c.properties.bytes +
      c.designations.bytes +
      c.ancestors.bytes;
  }

  /** Its columns as snapshot parts (index-snapshot.ts). */
  toParts(): SnapshotParts {
    const { c } = this;
    const parts: SnapshotParts = new Map();
    parts.set('maxId', Int32Array.of(c.maxId));
    for (const t of TEXT_COLUMNS) c[t].save(parts, t);
    c.statuses.save(parts, 'statuses');
    parts.set('flags', c.flags);
    c.byCode.save(parts, 'byCode');
    for (const a of ARRAYS) parts.set(a, c[a]);
    const d = c.designations.get();
    parts.set('designationStart', d.start);
    for (const k of DESIGNATION_COLUMNS) d[k].save(parts, `designation.${k}`);
    const a = c.ancestors.get();
    parts.set('ancestorStart', a.start);
    parts.set('ancestorList', a.list);
    const pr = c.properties.get();
    parts.set('propertyStart', pr.start);
    for (const k of PROPERTY_COLUMNS) pr[k].save(parts, `property.${k}`);
    return parts;
  }

  /**
   * The index a snapshot holds (throws a TypeError when a part is missing). The properties,
   * the designations and the ancestors are read from `parts` when first needed (`bytes`: what
   * they take then).
   */
  static fromParts(parts: PartSource, bytes: (names: string[]) => number = () => 0): CodeSystemIndex {
    const arrays = Object.fromEntries(ARRAYS.map((a) => [a, intPart(parts, a)])) as Record<(typeof ARRAYS)[number], Int32Array>;
    return new CodeSystemIndex({
      maxId: intPart(parts, 'maxId')[0],
      codes: TextColumn.load(parts, 'codes'),
      displays: TextColumn.load(parts, 'displays'),
      definitions: TextColumn.load(parts, 'definitions'),
      statuses: PooledColumn.load(parts, 'statuses'),
      flags: bytePart(parts, 'flags'),
      byCode: CodeTable.load(parts, 'byCode'),
      ...arrays,
      designations: Lazy.from(() => designationsOf(parts), bytes(LAZY_PARTS.designations)),
      ancestors: Lazy.from(() => ({ start: intPart(parts, 'ancestorStart'), list: intPart(parts, 'ancestorList') }), bytes(LAZY_PARTS.ancestors)),
      properties: Lazy.from(() => propertiesOf(parts), bytes(LAZY_PARTS.properties)),
    });
  }

  /** Reads what `fromParts` left for later (the properties, designations and ancestors), if anything. */
  loadAll(): void {
    this.c.properties.get();
    this.c.ancestors.get();
    this.c.designations.get();
  }

  /**
   * Decodes the text columns `fromParts` kept as ASCII bytes (flat-columns.ts) into one string
   * each: once, for the questions that read the values of many concepts (they wait for
   * `whenLoaded`); a point question reads its few values from the bytes.
   */
  private decodeTexts(group: keyof typeof LAZY_PARTS): void {
    for (const t of TEXT_COLUMNS) this.c[t].decode();
    if (group === 'designations') this.c.designations.get().value.decode();
    if (group === 'properties') this.c.properties.get().value.decode();
  }

  /** Whether a group `fromParts` left for later is read. */
  loaded(group: keyof typeof LAZY_PARTS): boolean {
    return this.c[group].loaded;
  }

  /** Reads a group `fromParts` left for later (if not yet read). */
  load(group: keyof typeof LAZY_PARTS): void {
    this.c[group].get();
  }

  /** `read` reads a group `fromParts` left for later in the background: `whenLoaded` waits for it. */
  loadingInBackground(group: keyof typeof LAZY_PARTS, read: Promise<unknown>): void {
    this.c[group].readInBackground(read);
  }

  /** Resolves when a group `fromParts` left for later is read (by the background read when one runs, else now). */
  async whenLoaded(group: keyof typeof LAZY_PARTS): Promise<void> {
    await this.c[group].ready();
    this.decodeTexts(group);
  }

  /** The id of a code (exact), or of the same code up to case when `caseInsensitive`; 0 = none. */
  idOf(code: string, caseInsensitive: boolean): number {
    const exact = this.c.byCode.find(this.c.codes, code);
    if (exact !== 0) return exact;
    if (!caseInsensitive) return 0;
    if (!this.byLower) {
      this.byLower = new Map();
      for (let id = 1; id <= this.maxId; id++) {
        if (!(this.c.flags[id] & EXISTS)) continue;
        const lower = this.c.codes.text0(id).toLowerCase();
        if (!this.byLower.has(lower)) this.byLower.set(lower, id);
      }
    }
    return this.byLower.get(code.toLowerCase()) ?? 0;
  }

  has(id: number): boolean {
    return id > 0 && id <= this.maxId && (this.c.flags[id] & EXISTS) !== 0;
  }

  code(id: number): string {
    return this.c.codes.text0(id);
  }

  display(id: number): string | undefined {
    return this.c.displays.get(id);
  }

  inactive(id: number): boolean {
    return (this.c.flags[id] & INACTIVE) !== 0;
  }

  abstract(id: number): boolean {
    return (this.c.flags[id] & ABSTRACT) !== 0;
  }

  /** The concept with this id (a fresh object). */
  concept(id: number): Concept {
    const { c } = this;
    return {
      id,
      code: c.codes.text0(id),
      display: c.displays.get(id),
      definition: c.definitions.get(id),
      inactive: this.inactive(id),
      abstract: this.abstract(id),
      status: c.statuses.get(id),
    };
  }

  designations(id: number): Designation[] {
    const dc = this.c.designations.get();
    const out: Designation[] = [];
    for (let i = dc.start[id]; i < dc.start[id + 1]; i++) {
      const d: Designation = { language: dc.language.get(i), use: dc.use.get(i), value: dc.value.text0(i) };
      const extension = dc.extension.get(i);
      if (extension) d.extension = extension;
      out.push(d);
    }
    return out;
  }

  properties(id: number): StoredProperty[] {
    const pc = this.c.properties.get();
    const out: StoredProperty[] = [];
    for (let i = pc.start[id]; i < pc.start[id + 1]; i++) {
      out.push({ code: pc.code.get(i), type: pc.type.get(i), value: pc.value.text0(i), system: pc.system.get(i), display: pc.display.get(i) });
    }
    return out;
  }

  /** Direct parents, ascending ids. */
  parents(id: number): Int32Array {
    return this.c.parentList.subarray(this.c.parentStart[id], this.c.parentStart[id + 1]);
  }

  /** Direct children, ascending ids. */
  children(id: number): Int32Array {
    return this.c.childList.subarray(this.c.childStart[id], this.c.childStart[id + 1]);
  }

  /** Every proper ancestor, ascending ids. */
  ancestors(id: number): Int32Array {
    const a = this.c.ancestors.get();
    return a.list.subarray(a.start[id], a.start[id + 1]);
  }

  /** True when `ancestor` is a proper ancestor of `descendant` (binary search). */
  isAncestor(ancestor: number, descendant: number): boolean {
    if (descendant <= 0 || descendant > this.maxId) return false;
    const { start, list } = this.c.ancestors.get();
    let lo = start[descendant];
    let hi = start[descendant + 1] - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const v = list[mid];
      if (v === ancestor) return true;
      if (v < ancestor) lo = mid + 1;
      else hi = mid - 1;
    }
    return false;
  }

  /**
   * `isAncestor` for one question without the ancestor lists (a persisted index reads them in
   * the background: a `$subsumes` need not wait for them): a walk up the parents of
   * `descendant`, each concept once. The same answer — the ancestors are what this walk
   * reaches, and a concept in a cycle is not its own — at a cost of the ancestors' number.
   */
  reachesUp(ancestor: number, descendant: number): boolean {
    if (ancestor === descendant || descendant <= 0 || descendant > this.maxId) return false;
    const seen = new Set<number>([descendant]);
    const stack = [descendant];
    while (stack.length > 0) {
      for (const p of this.parents(stack.pop() as number)) {
        if (p === ancestor) return true;
        if (seen.has(p)) continue;
        seen.add(p);
        stack.push(p);
      }
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
  const b = new IndexBuilder(rows.concepts.length);
  rows.concepts.forEach((c, i) => b.concept({ ...c, id: i + 1 }));
  // Grouped by concept, each concept's rows in their order (a stable sort).
  for (const d of [...rows.designations].sort((x, y) => x.concept - y.concept)) {
    b.designationOf(d.concept, { language: d.language, use: use(d), value: d.value, ...(d.extension ? { extension: JSON.parse(d.extension) as Designation['extension'] } : {}) });
  }
  for (const p of [...rows.properties].sort((x: PropertyRow, y: PropertyRow) => x.concept - y.concept)) {
    b.propertyOf(p.concept, { code: p.code, type: p.type, value: p.value, system: p.system, display: p.display });
  }
  for (const [child, parent] of rows.edges) b.edge(child, parent);
  return b.build();
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
  const b = new IndexBuilder(maxId);
  // Each slice comes back as ONE JSON text per table, parsed by JSON.parse: the drivers' row by
  // row decoding was most of a load's time (PGlite: ~60% of 33 s CPU for 350k concepts). Its
  // rows go into the columns (IndexBuilder) before the next slice is read.
  const rowsOf = async <T>(columns: string, from: string, range: number[]): Promise<T[]> => {
    const r = await tx.query<{ j: string }>(`SELECT coalesce(json_agg(json_build_array(${columns})), '[]')::text AS j FROM ${from}`, range);
    return JSON.parse(r.rows[0].j) as T[];
  };
  // By concept id; a stable sort, so that within a concept rows keep their storage order, as
  // the SQL read path returns them (no ORDER BY).
  const byConcept = <T extends [number, ...unknown[]]>(rows: T[]) => rows.sort((x, y) => x[0] - y[0]);
  for (let from = 1; from <= maxId; from += LOAD_CHUNK) {
    const range = [key, from, from + LOAD_CHUNK - 1];
    type ConceptRow = [number, string, string | null, string | null, boolean, boolean, string | null];
    for (const [id, code, display, definition, inactive, abstract, status] of byConcept(
      await rowsOf<ConceptRow>('id, code, display, definition, inactive, abstract, status', 'tx_concept WHERE cs_key = $1 AND id BETWEEN $2 AND $3', range),
    )) {
      b.concept({ id, code, display: display ?? undefined, definition: definition ?? undefined, inactive, abstract, status: status ?? undefined });
    }
    type DesignationJson = [number, string | null, string | null, string | null, string | null, string, string | null];
    for (const [concept, language, use_system, use_code, use_display, value, extension] of byConcept(
      await rowsOf<DesignationJson>('concept, language, use_system, use_code, use_display, value, extension', 'tx_designation WHERE cs_key = $1 AND concept BETWEEN $2 AND $3', range),
    )) {
      b.designationOf(concept, designationOf({ language, use_system, use_code, use_display, value, extension }));
    }
    type PropertyJson = [number, string, string, string, string | null, string | null];
    for (const [concept, code, type, value, system, display] of byConcept(
      await rowsOf<PropertyJson>('concept, code, type, value, system, display', 'tx_concept_property WHERE cs_key = $1 AND concept BETWEEN $2 AND $3', range),
    )) {
      b.propertyOf(concept, { code, type, value, system: system ?? undefined, display: display ?? undefined });
    }
    for (const [child, parent] of await rowsOf<[number, number]>('descendant, ancestor', 'tx_closure WHERE cs_key = $1 AND depth = 1 AND descendant BETWEEN $2 AND $3', range)) {
      b.edge(child, parent);
    }
  }
  return b.buildInTurns();
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
