import type { CodeSystemIndex } from '../fhir/code-system-index.js';
import { bytePart, intPart, TextColumn, textPart } from '../fhir/flat-columns.js';
import type { PartSource, SnapshotParts } from '../fhir/snapshot-format.js';
import type { Steps } from '../fhir/steps.js';
import { SCTID } from './sct-meta.js';

/**
 * The arrays of a SNOMED CT edition's graph (sct-index.ts): built from the edition's rows
 * (tx_sct_* tables) or read back from its persisted snapshot (docs/terminology.md#persisted-indexes)
 * — typed arrays, one text column and the few SCTIDs without a concept row, nothing per concept.
 */

/** Integer CSR: `start[key]..start[key+1]` entries of `list`, `width` ints each. */
export interface Csr {
  start: Int32Array;
  list: Int32Array;
  width: number;
}

export interface GraphParts {
  /** Every concept id of the index, ascending. */
  all: Int32Array;
  modules: Int32Array;
  effective: Int32Array;
  defined: Uint8Array;
  /** Attributes `[group, type, destination]` by source. */
  out: Csr;
  /** Reverse `[group, type, source]` by destination. */
  into: Csr;
  /** Concrete values `[type, group]` by source, their RF2 texts in `concreteValues` (same order). */
  concrete: Csr;
  concreteValues: TextColumn;
  /** Refset ids ascending; members of the i-th as `members` slice i. */
  refsetIds: Int32Array;
  members: Csr;
  /** `[refset, target]` pairs by referenced concept (association refsets). */
  targets: Csr;
  /** `[refset, source]` pairs by target concept. */
  sources: Csr;
  /** SCTIDs the edition uses without a concept row; id `maxId + 1 + i`. */
  extraCodes: string[];
}

/** The rows a graph is built from. */
export interface GraphRows {
  /** `[id, module SCTID, effective yyyymmdd, defined]`. */
  concepts: Array<[number, string, number, boolean]>;
  /** `source, type, destination, group` repeated (an edition has millions: a typed array, not a JavaScript one). */
  relationships: ArrayLike<number>;
  concrete: Array<[number, number, number, string]>;
  /** `refset, referenced, target (0 = none)` repeated. */
  members: ArrayLike<number>;
}

/** Ids of SCTIDs: their concept's, else one above the concepts (stable for one graph). */
export class ExtraIds {
  private readonly ids = new Map<string, number>();
  constructor(
    private readonly index: CodeSystemIndex,
    readonly codes: string[] = [],
  ) {
    codes.forEach((c, i) => this.ids.set(c, index.maxId + 1 + i));
  }

  idOf(sctid: string): number {
    const id = this.index.idOf(sctid, false);
    if (id > 0) return id;
    let extra = this.ids.get(sctid);
    if (extra === undefined) {
      extra = this.index.maxId + 1 + this.codes.length;
      this.ids.set(sctid, extra);
      this.codes.push(sctid);
    }
    return extra;
  }

  known(sctid: string): number | undefined {
    return this.ids.get(sctid);
  }
}

/** CSR of `rows` (`width` ints per row) keyed by column `keyAt`, keeping columns `order`. */
export function buildCsr(rows: ArrayLike<number>, width: number, keyAt: number, order: number[], skip?: (row: number) => boolean): Csr {
  const count = rows.length / width;
  let maxKey = 0;
  for (let i = 0; i < count; i++) if (!skip?.(i)) maxKey = Math.max(maxKey, rows[i * width + keyAt]);
  const start = new Int32Array(maxKey + 2);
  for (let i = 0; i < count; i++) if (!skip?.(i)) start[rows[i * width + keyAt] + 1]++;
  for (let i = 1; i <= maxKey + 1; i++) start[i] += start[i - 1];
  const fill = start.slice();
  const list = new Int32Array(start[maxKey + 1] * order.length);
  for (let i = 0; i < count; i++) {
    if (skip?.(i)) continue;
    const at = fill[rows[i * width + keyAt]]++ * order.length;
    for (let j = 0; j < order.length; j++) list[at + j] = rows[i * width + order[j]];
  }
  return { start, list, width: order.length };
}

export const EMPTY = new Int32Array(0);

/** Slice `key` of a CSR (empty past its end). */
export function csrSlice(csr: Csr, key: number): Int32Array {
  if (key < 0 || key + 1 >= csr.start.length) return EMPTY;
  return csr.list.subarray(csr.start[key] * csr.width, csr.start[key + 1] * csr.width);
}

function sortedUnique(list: Int32Array): Int32Array {
  const sorted = Int32Array.from(list).sort();
  let k = 0;
  for (let i = 0; i < sorted.length; i++) if (i === 0 || sorted[i] !== sorted[i - 1]) sorted[k++] = sorted[i];
  return sorted.slice(0, k);
}

/**
 * The graph's arrays from its rows as steps (a yield between pieces of some tens of
 * milliseconds each, for an edition's millions of relationships): a server builds an edition's
 * graph without a snapshot with the event loop let go between them (sct-index.ts).
 */
export function* buildGraphPartSteps(index: CodeSystemIndex, rows: GraphRows): Steps<GraphParts> {
  const n = index.maxId;
  const extras = new ExtraIds(index);
  const all: number[] = [];
  for (let id = 1; id <= n; id++) if (index.has(id)) all.push(id);
  const modules = new Int32Array(n + 1);
  const effective = new Int32Array(n + 1);
  const defined = new Uint8Array(n + 1);
  for (const [id, module, time, isDefined] of rows.concepts) {
    if (id > n) continue;
    modules[id] = extras.idOf(module);
    effective[id] = time;
    defined[id] = isDefined ? 1 : 0;
  }
  extras.idOf(SCTID.defined);
  extras.idOf(SCTID.primitive);
  yield;
  const concreteInts: number[] = [];
  const concreteTexts: string[] = [];
  const order = rows.concrete.map((_, i) => i).sort((a, b) => rows.concrete[a][0] - rows.concrete[b][0] || a - b);
  for (const i of order) {
    const [source, type, group, value] = rows.concrete[i];
    concreteInts.push(source, type, group);
    concreteTexts.push(value);
  }
  const concrete = buildCsr(concreteInts, 3, 0, [1, 2]);
  const concreteValues = TextColumn.of(concreteTexts);
  yield;
  const refsets = new Map<number, number[]>();
  for (let i = 0; i < rows.members.length; i += 3) {
    const list = refsets.get(rows.members[i]) ?? [];
    list.push(rows.members[i + 1]);
    refsets.set(rows.members[i], list);
  }
  const refsetIds = Int32Array.from([...refsets.keys()].sort((a, b) => a - b));
  const memberRows: number[] = [];
  refsetIds.forEach((refset, r) => {
    for (const m of sortedUnique(Int32Array.from(refsets.get(refset) ?? []))) memberRows.push(r, m);
  });
  const members = buildCsr(memberRows, 2, 0, [1]);
  yield;
  const noTarget = (row: number) => rows.members[row * 3 + 2] <= 0;
  const targets = buildCsr(rows.members, 3, 1, [0, 2], noTarget);
  const sources = buildCsr(rows.members, 3, 2, [0, 1], noTarget);
  yield;
  // source type destination grp
  const out = buildCsr(rows.relationships, 4, 0, [3, 1, 2]);
  yield;
  const into = buildCsr(rows.relationships, 4, 2, [3, 1, 0]);
  return {
    all: Int32Array.from(all),
    modules,
    effective,
    defined,
    out,
    into,
    // Sorted by source first, so that values keep their order within a source.
    concrete,
    concreteValues,
    refsetIds,
    members,
    targets,
    sources,
    extraCodes: extras.codes,
  };
}

const CSRS = ['out', 'into', 'concrete', 'members', 'targets', 'sources'] as const;
const ARRAYS = ['all', 'modules', 'effective', 'refsetIds'] as const;

export function saveGraphParts(g: GraphParts): SnapshotParts {
  const parts: SnapshotParts = new Map();
  for (const a of ARRAYS) parts.set(a, g[a]);
  parts.set('defined', g.defined);
  for (const c of CSRS) {
    parts.set(`${c}.start`, g[c].start);
    parts.set(`${c}.list`, g[c].list);
    parts.set(`${c}.width`, Int32Array.of(g[c].width));
  }
  g.concreteValues.save(parts, 'concreteValues');
  parts.set('extraCodes', JSON.stringify(g.extraCodes));
  return parts;
}

/** The graph's arrays from a snapshot (a TypeError when a part is missing). */
export function loadGraphParts(parts: PartSource): GraphParts {
  const csr = (c: string): Csr => ({ start: intPart(parts, `${c}.start`), list: intPart(parts, `${c}.list`), width: intPart(parts, `${c}.width`)[0] });
  return {
    all: intPart(parts, 'all'),
    modules: intPart(parts, 'modules'),
    effective: intPart(parts, 'effective'),
    defined: bytePart(parts, 'defined'),
    refsetIds: intPart(parts, 'refsetIds'),
    out: csr('out'),
    into: csr('into'),
    concrete: csr('concrete'),
    members: csr('members'),
    targets: csr('targets'),
    sources: csr('sources'),
    concreteValues: TextColumn.load(parts, 'concreteValues'),
    extraCodes: JSON.parse(textPart(parts, 'extraCodes')) as string[],
  };
}
