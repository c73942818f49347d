import type { Database, Queryable } from '../../../core/database.js';
import type { Logger } from 'pino';
import type { CodeSystemIndex } from '../fhir/code-system-index.js';
import { IntBuffer, type TextColumn } from '../fhir/flat-columns.js';
import { terminologyCache } from '../fhir/index-cache.js';
import { inTurns } from '../fhir/steps.js';
import { readSnapshot, snapshotKey, writeSnapshot, type SnapshotRead } from '../fhir/index-snapshot.js';
import type { CodeSystemInfo } from '../../types.js';
import { buildGraphPartSteps, csrSlice, EMPTY, ExtraIds, loadGraphParts, saveGraphParts, type Csr, type GraphParts, type GraphRows } from './sct-graph-parts.js';
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

export class SnomedGraph implements EclGraph {
  private readonly extras: ExtraIds;
  private readonly all: Int32Array;
  private readonly modules: Int32Array;
  private readonly effective: Int32Array;
  private readonly defined: Uint8Array;
  private readonly definedId: number;
  private readonly primitiveId: number;
  private readonly out: Csr;
  private readonly into: Csr;
  private readonly concrete: Csr;
  private readonly concreteTexts: TextColumn;
  /** Members by refset id (a slice of the members CSR each). */
  private readonly members = new Map<number, Int32Array>();
  private readonly refsetIds: Int32Array;
  private readonly targets: Csr;
  private readonly sources: Csr;
  /** `<concept id> NUL <term>` → `[refset id, acceptability id, …]` (loadDescriptions). */
  private readonly acceptability = new Map<string, number[]>();
  /** `<concept id> NUL <term>` → description SCTID (loadDescriptions). */
  private readonly descriptionIds = new Map<string, string>();

  /** The language refset part, read on first need (loadDescriptions). */
  private descriptionsLoaded: Promise<void> | undefined;

  constructor(
    readonly index: CodeSystemIndex,
    /** Its arrays (sct-graph-parts.ts: built from the rows, or read from a snapshot). */
    readonly parts: GraphParts,
    /** Reads the acceptability rows of the edition (on first need). */
    private readonly readAcceptability: () => Promise<Array<[number, string, string, string, boolean]>>,
  ) {
    this.extras = new ExtraIds(index, [...parts.extraCodes]);
    this.all = parts.all;
    this.modules = parts.modules;
    this.effective = parts.effective;
    this.defined = parts.defined;
    this.definedId = this.idOf(SCTID.defined);
    this.primitiveId = this.idOf(SCTID.primitive);
    this.out = parts.out;
    this.into = parts.into;
    this.concrete = parts.concrete;
    this.concreteTexts = parts.concreteValues;
    this.refsetIds = parts.refsetIds;
    parts.refsetIds.forEach((refset, r) => this.members.set(refset, csrSlice(parts.members, r)));
    this.targets = parts.targets;
    this.sources = parts.sources;
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
    return this.extras.idOf(sctid);
  }

  resolve(sctid: string): number | undefined {
    const id = this.index.idOf(sctid, false);
    if (id > 0) return id;
    return this.extras.known(sctid);
  }

  sctid(id: number): string {
    return id <= this.index.maxId ? this.index.code(id) : this.extras.codes[id - this.index.maxId - 1];
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
    return csrSlice(this.out, id);
  }

  incoming(id: number): ArrayLike<number> {
    return csrSlice(this.into, id);
  }

  concreteValues(id: number): readonly EclConcreteValue[] {
    const c = this.concrete;
    if (id < 0 || id + 1 >= c.start.length) return [];
    const out: EclConcreteValue[] = [];
    for (let i = c.start[id]; i < c.start[id + 1]; i++) {
      out.push({ group: c.list[i * 2 + 1], typeId: c.list[i * 2], value: concreteValue(this.concreteTexts.text0(i)) });
    }
    return out;
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
    return [...csrSlice(this.targets, id)];
  }

  historicalSources(id: number): ArrayLike<number> {
    return csrSlice(this.sources, id);
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

/** An RF2 concrete value: `#12`/`#1.5` a number, `"text"` a string, `true`/`false` a boolean. */
export function concreteValue(raw: string): number | string | boolean {
  if (raw.startsWith('#')) return Number(raw.slice(1));
  if (raw.startsWith('"') && raw.endsWith('"') && raw.length >= 2) return raw.slice(1, -1).replace(/\\"/g, '"');
  if (raw === 'true' || raw === 'false') return raw === 'true';
  return raw;
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
  const concepts: GraphRows['concepts'] = [];
  const concrete: GraphRows['concrete'] = [];
  const relationships = new IntBuffer(maxId * 8);
  const members = new IntBuffer(maxId * 3);
  for (let from = 1; from <= maxId; from += LOAD_CHUNK) {
    const range = [key, from, from + LOAD_CHUNK - 1];
    for (const r of await rowsOf<[number, string, number, boolean]>('id, module, effective, defined', 'tx_sct_concept WHERE cs_key = $1 AND id BETWEEN $2 AND $3', range)) concepts.push(r);
    for (const r of await rowsOf<[number, number, number, number]>('source, type, destination, grp', 'tx_sct_relationship WHERE cs_key = $1 AND source BETWEEN $2 AND $3', range)) {
      for (let k = 0; k < 4; k++) relationships.push(r[k]);
    }
    for (const r of await rowsOf<[number, number, number, string]>('source, type, grp, value', 'tx_sct_concrete WHERE cs_key = $1 AND source BETWEEN $2 AND $3', range)) concrete.push(r);
    for (const r of await rowsOf<[number, number, number | null]>('refset, referenced, target', 'tx_sct_member WHERE cs_key = $1 AND referenced BETWEEN $2 AND $3', range)) {
      members.push(r[0]);
      members.push(r[1]);
      members.push(r[2] ?? 0);
    }
  }
  return { concepts, concrete, relationships: relationships.finish(), members: members.finish() };
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

/** The graph's arrays built from the edition's tables. */
async function graphFromTables(db: Database, key: number, index: CodeSystemIndex): Promise<GraphParts> {
  // The event loop is let go between the steps (an edition's build is some hundreds of milliseconds of work).
  return inTurns(buildGraphPartSteps(index, await db.readPass((q) => loadRows(q, key, index.maxId))));
}

/** Snapshot section of an edition's graph (index-snapshot.ts). */
const SECTION = 'snomed';

/**
 * Builds the graph of an edition from its tables and persists it (`lattice import`, after the
 * edition is switched in: the first answer after a start then reads it).
 */
export async function persistSnomedGraph(db: Database, cs: Pick<CodeSystemInfo, 'key' | 'url' | 'version' | 'conceptCount'>, index: CodeSystemIndex): Promise<number> {
  return writeSnapshot(db, cs.key, SECTION, snapshotKey(cs), saveGraphParts(await graphFromTables(db, cs.key, index)));
}

/**
 * The graph's snapshot, read (started before the edition's index is there, so that both are
 * read at once: snomedGraph's `early`).
 */
export function readGraphSnapshot(db: Database, cs: CodeSystemInfo): Promise<SnapshotRead> {
  // One read at a time per edition: a request arriving while the start-up opening reads it shares that read.
  const reads = graphReads.get(db) ?? new Map<number, Promise<SnapshotRead>>();
  graphReads.set(db, reads);
  let read = reads.get(cs.key);
  if (!read) {
    read = readSnapshot(db, cs.key, SECTION, snapshotKey(cs)).catch((err: unknown) => ({ unusable: String(err) }));
    reads.set(cs.key, read);
    void read.finally(() => reads.delete(cs.key));
  }
  return read;
}

/** The graph snapshot reads in progress, per database and edition. */
const graphReads = new WeakMap<Database, Map<number, Promise<SnapshotRead>>>();

/**
 * The SNOMED CT graph of an edition whose code-system index is `index` (kept in the index's
 * memo: dropped, and rebuilt, with the index): read from its persisted snapshot when there is a
 * valid one (docs/terminology.md#persisted-indexes), else built from the tables — and then
 * persisted, in the background, for the next start.
 */
export function snomedGraph(db: Database, cs: CodeSystemInfo, index: CodeSystemIndex, log?: Logger, early?: Promise<SnapshotRead>): Promise<SnomedGraph> {
  const memo = index.memo.get('snomed') as Promise<SnomedGraph> | undefined;
  if (memo) return memo;
  const readAcceptability = () => db.readPass((q) => loadAcceptability(q, cs.key, index.maxId));
  const where = { url: cs.url, version: cs.version };
  const loading = (async () => {
    const started = Date.now();
    let read: SnapshotRead = await (early ?? readGraphSnapshot(db, cs));
    if ('parts' in read) {
      try {
        const graph = new SnomedGraph(index, loadGraphParts(read.parts), readAcceptability);
        log?.info({ ...where, source: 'snapshot', from: read.from, mb: Math.round(read.bytes / 1e6), ms: Date.now() - started }, 'SNOMED CT graph loaded');
        return graph;
      } catch (err) {
        if (!(err instanceof TypeError)) throw err;
        read = { unusable: err.message };
      }
    }
    if ('unusable' in read) log?.warn({ ...where, reason: read.unusable }, 'SNOMED CT graph snapshot unusable: rebuilt from the tables');
    const parts = await graphFromTables(db, cs.key, index);
    log?.info({ ...where, source: 'tables', ms: Date.now() - started }, 'SNOMED CT graph loaded');
    terminologyCache(db).track(writeSnapshot(db, cs.key, SECTION, snapshotKey(cs), saveGraphParts(parts)), where);
    return new SnomedGraph(index, parts, readAcceptability);
  })();
  index.memo.set('snomed', loading);
  loading.catch(() => index.memo.delete('snomed'));
  return loading;
}
