import type { Database, Queryable } from '../../../core/database.js';
import type { CodeSystemIndex } from '../fhir/code-system-index.js';
import type { EclConcreteValue, EclDescription, EclGraph, IdList } from './ecl/graph.js';
import { DESCRIPTION_MARKER, SCTID } from './sct-meta.js';

/**
 * One SNOMED CT edition in memory (docs/terminology.md#snomed-ct): the code-system index every
 * provider has (concepts, designations, properties, the is-a hierarchy with every concept's
 * ancestors) plus what only SNOMED CT has, read from its own tables (migration 430): attribute
 * relationships with their groups (and the reverse), concrete values, refset members and
 * association targets, description acceptability per language refset. It is kept with the
 * code-system index (in its memo), so it is cached, budgeted and dropped with it.
 *
 * It is the `EclGraph` the ECL evaluator reads: ids are the index's concept ids; SCTIDs the
 * edition uses without a concept row (a metadata concept outside a subset) get ids above them.
 */

const LOAD_CHUNK = 5_000;

/** Integer CSR: `start[id]..start[id+1]` slices of `list` (k ints per entry). */
interface Csr {
  start: Int32Array;
  list: Int32Array;
}

function buildCsr(maxId: number, rows: number[], width: number, keyAt: number, order: number[]): Csr {
  const count = rows.length / width;
  const start = new Int32Array(maxId + 2);
  for (let i = 0; i < count; i++) start[rows[i * width + keyAt] + 1]++;
  for (let i = 1; i <= maxId + 1; i++) start[i] += start[i - 1];
  const fill = start.slice();
  const list = new Int32Array(count * order.length);
  for (let i = 0; i < count; i++) {
    const at = fill[rows[i * width + keyAt]]++ * order.length;
    for (let j = 0; j < order.length; j++) list[at + j] = rows[i * width + order[j]];
  }
  return { start, list };
}

export class SnomedGraph implements EclGraph {
  private readonly extraIds = new Map<string, number>();
  private readonly extraCodes: string[] = [];
  private readonly all: Int32Array;
  private readonly modules: Int32Array;
  private readonly effective: Int32Array;
  private readonly defined: Uint8Array;
  private readonly definedId: number;
  private readonly primitiveId: number;
  /** Attributes `[group, type, destination]` by source. */
  private readonly out: Csr;
  /** Reverse `[group, type, source]` by destination. */
  private readonly into: Csr;
  private readonly concrete = new Map<number, EclConcreteValue[]>();
  private readonly members = new Map<number, Int32Array>();
  private readonly refsetIds: Int32Array;
  /** `[refset, target]` pairs by referenced concept (association refsets). */
  private readonly targets = new Map<number, number[]>();
  /** `[refset, source]` pairs by target concept. */
  private readonly sources = new Map<number, number[]>();
  /** `<concept id> NUL <term>` → `[refset id, acceptability id, …]` (loadDescriptions). */
  private readonly acceptability = new Map<string, number[]>();
  /** `<concept id> NUL <term>` → description SCTID (loadDescriptions). */
  private readonly descriptionIds = new Map<string, string>();

  /** The language refset part, read on first need (loadDescriptions). */
  private descriptionsLoaded: Promise<void> | undefined;

  constructor(
    readonly index: CodeSystemIndex,
    rows: GraphRows,
    /** Reads the acceptability rows of the edition (on first need). */
    private readonly readAcceptability: () => Promise<Array<[number, string, string, string, boolean]>>,
  ) {
    const n = index.maxId;
    const all: number[] = [];
    for (let id = 1; id <= n; id++) if (index.has(id)) all.push(id);
    this.all = Int32Array.from(all);
    this.modules = new Int32Array(n + 1);
    this.effective = new Int32Array(n + 1);
    this.defined = new Uint8Array(n + 1);
    for (let i = 0; i < rows.concepts.length; i++) {
      const [id, module, effective, defined] = rows.concepts[i];
      if (id > n) continue;
      this.modules[id] = this.idOf(module);
      this.effective[id] = effective;
      this.defined[id] = defined ? 1 : 0;
    }
    this.definedId = this.idOf(SCTID.defined);
    this.primitiveId = this.idOf(SCTID.primitive);
    // source type destination grp
    this.out = buildCsr(n, rows.relationships, 4, 0, [3, 1, 2]);
    this.into = buildCsr(n, rows.relationships, 4, 2, [3, 1, 0]);
    for (const [source, type, group, value] of rows.concrete) {
      const list = this.concrete.get(source) ?? [];
      list.push({ group, typeId: type, value: concreteValue(value) });
      this.concrete.set(source, list);
    }
    const byRefset = new Map<number, number[]>();
    for (let i = 0; i < rows.members.length; i += 3) {
      const [refset, referenced, target] = [rows.members[i], rows.members[i + 1], rows.members[i + 2]];
      const list = byRefset.get(refset) ?? [];
      list.push(referenced);
      byRefset.set(refset, list);
      if (target > 0) {
        const t = this.targets.get(referenced) ?? [];
        t.push(refset, target);
        this.targets.set(referenced, t);
        const s = this.sources.get(target) ?? [];
        s.push(refset, referenced);
        this.sources.set(target, s);
      }
    }
    for (const [refset, list] of byRefset) this.members.set(refset, sortedUnique(list));
    this.refsetIds = Int32Array.from([...byRefset.keys()].sort((a, b) => a - b));
  }

  /**
   * Reads the acceptability of descriptions in the language refsets (dialects) into the graph:
   * what `descriptions` reports as acceptability and description SCTIDs. Only ECL description
   * filters need it, so it is read the first time one is evaluated (sct-ecl.ts).
   */
  loadDescriptions(): Promise<void> {
    this.descriptionsLoaded ??= this.readAcceptability().then((rows) => {
      const preferredId = this.idOf(SCTID.preferred);
      const acceptableId = this.idOf(SCTID.acceptable);
      for (const [concept, description, term, refset, preferred] of rows) {
        const key = `${concept}\u0000${term}`;
        this.descriptionIds.set(key, description);
        const list = this.acceptability.get(key) ?? [];
        list.push(this.idOf(refset), preferred ? preferredId : acceptableId);
        this.acceptability.set(key, list);
      }
    });
    this.descriptionsLoaded.catch(() => (this.descriptionsLoaded = undefined));
    return this.descriptionsLoaded;
  }

  private recorded: boolean | undefined;

  /**
   * Whether the loader recorded each description's acceptability with it (sct-meta.ts): then
   * dialect filters need no reading of `tx_sct_acceptability`. Judged on the first concepts
   * that have designations.
   */
  acceptabilityRecorded(): boolean {
    if (this.recorded === undefined) {
      let seen = 0;
      this.recorded = false;
      for (const id of this.all) {
        const list = this.index.designations(id);
        if (list.length === 0) continue;
        if (list.some((d) => d.extension?.some((e) => e.url === DESCRIPTION_MARKER))) {
          this.recorded = true;
          break;
        }
        if (++seen >= 1000) break;
      }
    }
    return this.recorded;
  }

  private dialectsRegistered = false;

  /**
   * Gives the language refsets the descriptions' markers name (and the acceptability values) an
   * id before an expression is evaluated, so that a dialect filter resolves them by SCTID even
   * when the edition has no concept row for them: one pass over the designations, the first
   * time a description filter is evaluated (their markers are shared objects, each read once).
   */
  registerDialects(): void {
    if (this.dialectsRegistered) return;
    this.dialectsRegistered = true;
    this.idOf(SCTID.preferred);
    this.idOf(SCTID.acceptable);
    const seen = new Set<unknown>();
    for (const id of this.all) {
      for (const d of this.index.designations(id)) {
        const extension = d.extension;
        if (!extension || seen.has(extension)) continue;
        seen.add(extension);
        for (const e of extension) {
          if (e.url !== DESCRIPTION_MARKER || typeof e.valueString !== 'string') continue;
          for (const t of e.valueString.split(' ')) if (t.startsWith('p') || t.startsWith('a')) this.idOf(t.slice(1));
        }
      }
    }
  }

  /** `[refset, acceptability, …]` of a marker's `p<refset>` / `a<refset>` tokens. */
  private markerAcceptability(tokens: string[]): number[] {
    const out: number[] = [];
    for (const t of tokens) {
      if (t.startsWith('p')) out.push(this.idOf(t.slice(1)), this.idOf(SCTID.preferred));
      else if (t.startsWith('a')) out.push(this.idOf(t.slice(1)), this.idOf(SCTID.acceptable));
    }
    return out;
  }

  /** The id of an SCTID: its concept's, else one above the concepts (stable for this graph). */
  private idOf(sctid: string): number {
    const id = this.index.idOf(sctid, false);
    if (id > 0) return id;
    let extra = this.extraIds.get(sctid);
    if (extra === undefined) {
      extra = this.index.maxId + 1 + this.extraCodes.length;
      this.extraIds.set(sctid, extra);
      this.extraCodes.push(sctid);
    }
    return extra;
  }

  resolve(sctid: string): number | undefined {
    const id = this.index.idOf(sctid, false);
    if (id > 0) return id;
    return this.extraIds.get(sctid);
  }

  sctid(id: number): string {
    return id <= this.index.maxId ? this.index.code(id) : this.extraCodes[id - this.index.maxId - 1];
  }

  allConcepts(): IdList {
    return this.all;
  }

  private hierarchy: Int32Array | undefined;

  hierarchyConcepts(): IdList {
    if (this.hierarchy) return this.hierarchy;
    const root = this.index.idOf(SCTID.root, false);
    // An edition without its root concept (a fragment) has no hierarchy to stand on.
    if (root <= 0) return (this.hierarchy = this.all);
    this.hierarchy = this.all.filter((id) => id === root || this.index.inactive(id) || this.index.isAncestor(root, id));
    return this.hierarchy;
  }

  isConcept(id: number): boolean {
    return this.index.has(id);
  }

  isActive(id: number): boolean {
    return this.index.has(id) && !this.index.inactive(id);
  }

  definitionStatus(id: number): number {
    return this.defined[id] ? this.definedId : this.primitiveId;
  }

  moduleId(id: number): number {
    return this.modules[id] ?? 0;
  }

  effectiveTime(id: number): number {
    return this.effective[id] ?? 0;
  }

  parents(id: number): IdList {
    return this.index.has(id) ? this.index.parents(id) : EMPTY;
  }

  children(id: number): IdList {
    return this.index.has(id) ? this.index.children(id) : EMPTY;
  }

  ancestors(id: number): IdList {
    return this.index.has(id) ? this.index.ancestors(id) : EMPTY;
  }

  descendants(id: number): IdList {
    if (!this.index.has(id)) return EMPTY;
    return Int32Array.from(this.index.descendants(id)).sort();
  }

  attributes(id: number): ArrayLike<number> {
    return slice(this.out, id);
  }

  incoming(id: number): ArrayLike<number> {
    return slice(this.into, id);
  }

  concreteValues(id: number): readonly EclConcreteValue[] {
    return this.concrete.get(id) ?? [];
  }

  isRefset(id: number): boolean {
    return this.members.has(id);
  }

  refsets(): IdList {
    return this.refsetIds;
  }

  refsetMembers(refsetId: number): IdList {
    return this.members.get(refsetId) ?? EMPTY;
  }

  /** `[association refset, target, …]` of an (inactive) concept: its replacements. */
  associationTargets(id: number): number[] {
    return this.targets.get(id) ?? [];
  }

  historicalSources(id: number): ArrayLike<number> {
    return this.sources.get(id) ?? [];
  }

  descriptions(id: number): readonly EclDescription[] {
    if (!this.index.has(id)) return [];
    const module = this.modules[id];
    return this.index.designations(id).map((d) => {
      const key = `${id}\u0000${d.value}`;
      // The loader's marker (sct-meta.ts) says whether it is active and its acceptability.
      const marker = d.extension?.find((e) => e.url === DESCRIPTION_MARKER)?.valueString;
      const tokens = typeof marker === 'string' ? marker.split(' ') : undefined;
      const active = !tokens?.includes('inactive');
      return {
        sctid: this.descriptionIds.get(key) ?? '',
        active,
        term: d.value,
        languageCode: d.language ?? 'en',
        typeId: d.use?.code ? this.idOf(d.use.code) : 0,
        moduleId: module,
        effectiveTime: 0,
        acceptability: tokens ? this.markerAcceptability(tokens) : active ? (this.acceptability.get(key) ?? []) : [],
      };
    });
  }
}

const EMPTY = new Int32Array(0);

function slice(csr: Csr, id: number): ArrayLike<number> {
  if (id < 0 || id + 1 >= csr.start.length) return EMPTY;
  return csr.list.subarray(csr.start[id] * 3, csr.start[id + 1] * 3);
}

function sortedUnique(list: number[]): Int32Array {
  const sorted = Int32Array.from(list).sort();
  let k = 0;
  for (let i = 0; i < sorted.length; i++) if (i === 0 || sorted[i] !== sorted[i - 1]) sorted[k++] = sorted[i];
  return sorted.slice(0, k);
}

/** An RF2 concrete value: `#12`/`#1.5` a number, `"text"` a string, `true`/`false` a boolean. */
export function concreteValue(raw: string): number | string | boolean {
  if (raw.startsWith('#')) return Number(raw.slice(1));
  if (raw.startsWith('"') && raw.endsWith('"') && raw.length >= 2) return raw.slice(1, -1).replace(/\\"/g, '"');
  if (raw === 'true' || raw === 'false') return raw === 'true';
  return raw;
}

interface GraphRows {
  /** `[id, module SCTID, effective yyyymmdd, defined]`. */
  concepts: Array<[number, string, number, boolean]>;
  /** `source, type, destination, group` repeated. */
  relationships: number[];
  concrete: Array<[number, number, number, string]>;
  /** `refset, referenced, target (0 = none)` repeated. */
  members: number[];
}

type RowsOf = <T>(columns: string, from: string, range: number[]) => Promise<T[]>;

function rowReader(q: Queryable): RowsOf {
  return async <T>(columns: string, from: string, range: number[]): Promise<T[]> => {
    const r = await q.query<{ j: string }>(`SELECT coalesce(json_agg(json_build_array(${columns})), '[]')::text AS j FROM ${from}`, range);
    return JSON.parse(r.rows[0].j) as T[];
  };
}

/** The SNOMED CT part of an edition's index, read from its tables in concept ranges. */
async function loadRows(q: Queryable, key: number, maxId: number): Promise<GraphRows> {
  const rowsOf = rowReader(q);
  const out: GraphRows = { concepts: [], relationships: [], concrete: [], members: [] };
  for (let from = 1; from <= maxId; from += LOAD_CHUNK) {
    const range = [key, from, from + LOAD_CHUNK - 1];
    for (const r of await rowsOf<[number, string, number, boolean]>('id, module, effective, defined', 'tx_sct_concept WHERE cs_key = $1 AND id BETWEEN $2 AND $3', range)) out.concepts.push(r);
    for (const r of await rowsOf<[number, number, number, number]>('source, type, destination, grp', 'tx_sct_relationship WHERE cs_key = $1 AND source BETWEEN $2 AND $3', range)) {
      out.relationships.push(r[0], r[1], r[2], r[3]);
    }
    for (const r of await rowsOf<[number, number, number, string]>('source, type, grp, value', 'tx_sct_concrete WHERE cs_key = $1 AND source BETWEEN $2 AND $3', range)) out.concrete.push(r);
    for (const r of await rowsOf<[number, number, number | null]>('refset, referenced, target', 'tx_sct_member WHERE cs_key = $1 AND referenced BETWEEN $2 AND $3', range)) {
      out.members.push(r[0], r[1], r[2] ?? 0);
    }
  }
  return out;
}

async function loadAcceptability(q: Queryable, key: number, maxId: number): Promise<Array<[number, string, string, string, boolean]>> {
  const rowsOf = rowReader(q);
  const out: Array<[number, string, string, string, boolean]> = [];
  for (let from = 1; from <= maxId; from += LOAD_CHUNK) {
    for (const r of await rowsOf<[number, string, string, string, boolean]>(
      'concept, description, term, refset, preferred',
      'tx_sct_acceptability WHERE cs_key = $1 AND concept BETWEEN $2 AND $3',
      [key, from, from + LOAD_CHUNK - 1],
    )) {
      out.push(r);
    }
  }
  return out;
}

/**
 * The SNOMED CT graph of an edition whose code-system index is `index` (built once, kept in
 * the index's memo: dropped, and rebuilt, with the index).
 */
export function snomedGraph(db: Database, key: number, index: CodeSystemIndex): Promise<SnomedGraph> {
  const memo = index.memo.get('snomed') as Promise<SnomedGraph> | undefined;
  if (memo) return memo;
  const loading = db
    .readPass((q) => loadRows(q, key, index.maxId))
    .then((rows) => new SnomedGraph(index, rows, () => db.readPass((q) => loadAcceptability(q, key, index.maxId))));
  index.memo.set('snomed', loading);
  loading.catch(() => index.memo.delete('snomed'));
  return loading;
}
