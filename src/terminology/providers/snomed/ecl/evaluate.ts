import type {
  Acceptability,
  AttributeValue,
  ComparisonOperator,
  ConceptFilter,
  ConceptSetOperand,
  DescriptionFilter,
  Expression,
  MemberFilter,
  Refinement,
  SearchTerm,
} from './ast.js';
import { SCT, type EclDescription, type EclGraph, type EclRefsetMember } from './graph.js';
import { parseEclCached } from './parser.js';
import { printEcl } from './print.js';
import { EMPTY, Membership, fromSorted, fromUnsorted, intersect, minus, union, unionMany } from './sets.js';

/**
 * Evaluates an ECL expression constraint against an EclGraph
 * (docs/terminology.md#snomed-ct-expression-constraints-ecl): the result is the sorted ids of
 * the concepts it selects. Sub-results are cached per graph under their normalised text; the
 * work is counted and bounded, and long evaluations yield to the event loop between slices.
 */

/** The default bound on the work of one evaluation (ids and relationships visited). */
export const ECL_DEFAULT_BUDGET = 20_000_000;
/** Work between two yields to the event loop. */
const SLICE = 50_000;
/** Cached sub-results per graph: at most this many ids in all, and this many entries. */
const CACHE_MAX_IDS = 8_000_000;
const CACHE_MAX_ENTRIES = 2_000;

/** The setting that configures the work bound of a server's evaluations (docs/terminology.md#limits). */
export const ECL_BUDGET_SETTING = 'LATTICE_TX_ECL_MAX_STEPS';

export class EclTooCostlyError extends Error {
  constructor(readonly budget: number) {
    super(`ECL expression too costly to evaluate (more than ${budget} steps, ${ECL_BUDGET_SETTING})`);
    this.name = 'EclTooCostlyError';
  }
}

/** A construct the graph cannot answer (member filters without member rows). */
export class EclUnsupportedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EclUnsupportedError';
  }
}

export interface EclEvalOptions {
  /**
   * What `*` stands for: the active concepts (the default) or all of them. Concepts named by id
   * or referenced by refset members are selected whether active or not; the hierarchy and
   * attribute relationships only reach active concepts.
   */
  readonly substrate?: 'active' | 'all';
  /** The work bound (steps); ECL_DEFAULT_BUDGET when absent. */
  readonly budget?: number;
  /** Whether to use (and fill) the per-graph cache; true when absent. */
  readonly cache?: boolean;
}

/** Dialect aliases the evaluator knows (graphs may add more with `dialectAlias`). */
const DIALECT_ALIASES: Record<string, string> = {
  'en-us': '900000000000509007',
  'en-gb': '900000000000508004',
  'en-au': '32570271000036106',
  'en-nz': '271000210107',
  'en-nhs-clinical': '999001261000000100',
  'en-nhs-pharmacy': '999000691000001104',
};

/** History profiles: the association refsets each follows (MAX and a bare HISTORY: all). */
const HISTORY_MIN = ['900000000000527005']; // SAME AS
const HISTORY_MOD = ['900000000000527005', '900000000000526001', '900000000000528000', '1186921001']; // + REPLACED BY, WAS A, PARTIALLY EQUIVALENT TO

interface CacheEntry {
  readonly ids: Int32Array;
}

class GraphCache {
  readonly entries = new Map<string, CacheEntry>();
  size = 0;

  get(key: string): Int32Array | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    this.entries.delete(key);
    this.entries.set(key, e);
    return e.ids;
  }

  set(key: string, ids: Int32Array): void {
    if (ids.length > CACHE_MAX_IDS / 4) return;
    const old = this.entries.get(key);
    if (old) {
      this.size -= old.ids.length;
      this.entries.delete(key);
    }
    this.entries.set(key, { ids });
    this.size += ids.length;
    while (this.size > CACHE_MAX_IDS || this.entries.size > CACHE_MAX_ENTRIES) {
      const [k, v] = this.entries.entries().next().value as [string, CacheEntry];
      this.entries.delete(k);
      this.size -= v.ids.length;
    }
  }
}

const caches = new WeakMap<EclGraph, GraphCache>();

/** The normalised text of a (read-only) tree, computed once per node. */
const keys = new WeakMap<Expression, string>();
function keyOf(e: Expression): string {
  let k = keys.get(e);
  if (k === undefined) {
    k = printEcl(e, true);
    keys.set(e, k);
  }
  return k;
}

/** Drops the cached results of a graph (the snomed provider calls it when an edition is replaced). */
export function clearEclCache(graph: EclGraph): void {
  caches.delete(graph);
}

/**
 * The ids of the concepts the expression selects, sorted ascending. The array may be shared
 * with the cache: do not modify it. Unknown concepts select nothing (see unknownEclConcepts).
 */
export async function evaluateEcl(graph: EclGraph, expression: Expression | string, options: EclEvalOptions = {}): Promise<Int32Array> {
  const expr = typeof expression === 'string' ? parseEclCached(expression) : expression;
  return new Evaluator(graph, options).run(expr);
}

/**
 * A concept the edition does not have: a postcoordinated expression read as a new concept
 * (docs/terminology.md#postcoordinated-expressions-compositional-grammar). Its parents are
 * its focus concepts; its attributes may have nested virtual concepts as values.
 */
export interface VirtualConcept {
  readonly parents: readonly number[];
  /** `[group, typeId, value]`, group 0 ungrouped. */
  readonly attributes: ReadonlyArray<readonly [number, number, number | VirtualConcept]>;
  readonly concrete: ReadonlyArray<{ readonly group: number; readonly typeId: number; readonly value: number | string | boolean }>;
  /** Its definition status id, when known. */
  readonly definitionStatus?: number;
}

/**
 * Whether the expression constraint selects a concept: a real one (by id) or a virtual one (a
 * postcoordinated expression). A virtual concept is a subtype of its focus concepts and of
 * their ancestors but nobody's known child (`<!` needs a classification), has no subtypes, is
 * never named, a refset member or an attribute's target, has no descriptions, module or
 * effective time, and is active.
 */
export async function eclSelects(graph: EclGraph, expression: Expression | string, candidate: number | VirtualConcept, options: EclEvalOptions = {}): Promise<boolean> {
  const expr = typeof expression === 'string' ? parseEclCached(expression) : expression;
  const ev = new Evaluator(graph, options);
  if (typeof candidate === 'number') {
    const ids = await ev.run(expr);
    let lo = 0;
    let hi = ids.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (ids[mid] === candidate) return true;
      if (ids[mid] < candidate) lo = mid + 1;
      else hi = mid - 1;
    }
    return false;
  }
  return ev.selectsVirtual(expr, candidate);
}

/** Every SCTID the expression names (concept references and refsets, not terms). */
export function eclConceptIds(expr: Expression): string[] {
  const out = new Set<string>();
  JSON.stringify(expr, (k, v: unknown) => {
    if (v && typeof v === 'object' && (v as { type?: string }).type === 'concept') out.add((v as { sctid: string }).sctid);
    return v;
  });
  return [...out];
}

/**
 * What parts of an edition the expression reads beyond the hierarchy and relationships, so a
 * provider that loads them lazily can load them first: descriptions (description filters),
 * member rows (member filters, field selection), historical associations (history supplements).
 */
export function eclNeeds(expr: Expression): { descriptions: boolean; memberRows: boolean; history: boolean } {
  const needs = { descriptions: false, memberRows: false, history: false };
  JSON.stringify(expr, (_k, v: unknown) => {
    if (v && typeof v === 'object') {
      const o = v as { type?: string; kind?: string; fields?: unknown; memberFilters?: unknown[] };
      if (o.kind === 'description') needs.descriptions = true;
      if (o.type === 'memberOf' && (o.fields !== undefined || (o.memberFilters?.length ?? 0) > 0)) needs.memberRows = true;
      if (o.type === 'history') needs.history = true;
    }
    return v;
  });
  return needs;
}

/** The SCTIDs the expression names that the graph does not know. */
export function unknownEclConcepts(graph: EclGraph, expr: Expression): string[] {
  return eclConceptIds(expr).filter((s) => graph.resolve(s) === undefined);
}

class Work {
  steps = 0;
  private nextPause = SLICE;

  constructor(readonly limit: number) {}

  add(n: number): void {
    this.steps += n;
    if (this.steps > this.limit) throw new EclTooCostlyError(this.limit);
  }

  get due(): boolean {
    return this.steps >= this.nextPause;
  }

  async pause(): Promise<void> {
    this.nextPause = this.steps + SLICE;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/** A compiled attribute: its types, the values it accepts, its cardinality. */
interface CompiledAttribute {
  readonly kind: 'attribute';
  readonly min: number;
  readonly max: number;
  readonly reverse: boolean;
  readonly types: Membership;
  /** For expression values: the value set and whether `=`. */
  readonly values?: Membership;
  /** The value's expression (a virtual concept's nested values are tested against it). */
  readonly valueExpr?: Expression;
  readonly valueIds?: Int32Array;
  readonly equals: boolean;
  /** For concrete values. */
  readonly concrete?: (v: number | string | boolean) => boolean;
}

type Compiled =
  | CompiledAttribute
  | { readonly kind: 'group'; readonly min: number; readonly max: number; readonly inner: Compiled }
  | { readonly kind: 'and' | 'or'; readonly operands: readonly Compiled[] };

class Evaluator {
  private readonly work: Work;
  private readonly cache: GraphCache | undefined;
  private readonly active: boolean;
  private readonly local = new Map<string, Int32Array>();

  constructor(
    private readonly g: EclGraph,
    options: EclEvalOptions,
  ) {
    this.work = new Work(options.budget ?? ECL_DEFAULT_BUDGET);
    this.active = (options.substrate ?? 'active') === 'active';
    if (options.cache !== false) {
      let c = caches.get(g);
      if (!c) caches.set(g, (c = new GraphCache()));
      this.cache = c;
    }
  }

  async run(e: Expression): Promise<Int32Array> {
    return this.eval(e);
  }

  private async tick(n = 1): Promise<void> {
    this.work.add(n);
    if (this.work.due) await this.work.pause();
  }

  /** Keeps the ids the substrate allows. */
  private substrate(ids: Int32Array): Int32Array {
    if (!this.active) return ids;
    let all = true;
    for (let i = 0; i < ids.length; i++)
      if (!this.g.isActive(ids[i])) {
        all = false;
        break;
      }
    if (all) return ids;
    return ids.filter((x) => this.g.isActive(x));
  }

  private async eval(e: Expression): Promise<Int32Array> {
    if (e.type === 'concept') return this.concept(e.sctid);
    const key = `${this.active ? 'a' : 'all'}:${keyOf(e)}`;
    const local = this.local.get(key);
    if (local) return local;
    const cached = this.cache?.get(key);
    if (cached) {
      await this.tick(1);
      return cached;
    }
    const result = await this.compute(e);
    this.local.set(key, result);
    this.cache?.set(key, result);
    return result;
  }

  private concept(sctid: string): Int32Array {
    const id = this.g.resolve(sctid);
    return id === undefined ? EMPTY : Int32Array.of(id);
  }

  private async compute(e: Expression): Promise<Int32Array> {
    await this.tick(1);
    switch (e.type) {
      case 'concept':
        return this.concept(e.sctid);
      case 'any': {
        const all = this.g.hierarchyConcepts?.() ?? this.g.allConcepts();
        await this.tick(all.length);
        return this.substrate(fromSorted(all));
      }
      case 'alternateIdentifier': {
        const id = this.g.resolveAlternate?.(e.scheme, e.code);
        return id === undefined ? EMPTY : this.concept(this.g.sctid(id));
      }
      case 'hierarchy':
        return this.hierarchy(e.operator, await this.eval(e.operand));
      case 'memberOf':
        return this.memberOf(e);
      case 'and': {
        const sets: Int32Array[] = [];
        for (const o of e.operands) sets.push(await this.eval(o));
        sets.sort((a, b) => a.length - b.length);
        let acc = sets[0];
        for (const s of sets.slice(1)) {
          await this.tick(acc.length + s.length);
          acc = intersect(acc, s);
        }
        return acc;
      }
      case 'or': {
        const sets: Int32Array[] = [];
        for (const o of e.operands) sets.push(await this.eval(o));
        await this.tick(sets.reduce((n, s) => n + s.length, 0));
        return unionMany(sets);
      }
      case 'minus': {
        const a = await this.eval(e.left);
        const b = await this.eval(e.right);
        await this.tick(a.length + b.length);
        return minus(a, b);
      }
      case 'refined': {
        const focus = await this.eval(e.focus);
        return this.refine(focus, e.refinement);
      }
      case 'dotted': {
        const focus = await this.eval(e.focus);
        const types = await this.membership(await this.eval(e.attribute));
        const out: number[] = [];
        for (let i = 0; i < focus.length; i++) {
          const rels = this.g.attributes(focus[i]);
          this.work.add(rels.length / 3 + 1);
          for (let k = 0; k < rels.length; k += 3) if (types.has(rels[k + 1])) out.push(rels[k + 2]);
          if (this.work.due) await this.work.pause();
        }
        return fromUnsorted(out);
      }
      case 'filtered': {
        const focus = await this.eval(e.focus);
        const f = e.filter;
        const test = f.kind === 'concept' ? await this.conceptFilters(f.filters) : await this.descriptionFilters(f.filters);
        const out: number[] = [];
        for (let i = 0; i < focus.length; i++) {
          if (test(focus[i])) out.push(focus[i]);
          if (this.work.due) await this.work.pause();
        }
        return Int32Array.from(out);
      }
      case 'history':
        return this.history(e);
    }
  }

  // ---- virtual concepts ------------------------------------------------------------------------

  /** The real ancestors of a virtual concept: its parents and theirs. */
  private virtualAncestors(v: VirtualConcept): Int32Array {
    const lists: ArrayLike<number>[] = [fromUnsorted([...v.parents])];
    for (const p of v.parents) lists.push(this.g.ancestors(p));
    this.work.add(lists.reduce((n, l) => n + l.length, 0));
    return unionMany(lists);
  }

  async selectsVirtual(e: Expression, v: VirtualConcept): Promise<boolean> {
    await this.tick(1);
    switch (e.type) {
      case 'concept':
      case 'alternateIdentifier':
      case 'memberOf':
      case 'dotted':
        return false;
      case 'any':
        return true;
      case 'hierarchy': {
        switch (e.operator) {
          case 'ancestorOf':
          case 'parentOf':
            return false;
          case 'ancestorOrSelfOf':
          case 'parentOrSelfOf':
          case 'bottom':
            return this.selectsVirtual(e.operand, v);
          case 'childOf':
            // its direct parents are only known once classified: it may sit below an existing subtype
            return false;
          case 'childOrSelfOf':
            return this.selectsVirtual(e.operand, v);
          case 'descendantOf':
          case 'descendantOrSelfOf': {
            if (e.operator === 'descendantOrSelfOf' && (await this.selectsVirtual(e.operand, v))) return true;
            const xs = await this.membership(await this.eval(e.operand));
            return this.virtualAncestors(v).some((a) => xs.has(a));
          }
          case 'top': {
            if (!(await this.selectsVirtual(e.operand, v))) return false;
            const xs = await this.membership(await this.eval(e.operand));
            return !this.virtualAncestors(v).some((a) => xs.has(a));
          }
        }
        return false;
      }
      case 'and':
        for (const o of e.operands) if (!(await this.selectsVirtual(o, v))) return false;
        return true;
      case 'or':
        for (const o of e.operands) if (await this.selectsVirtual(o, v)) return true;
        return false;
      case 'minus':
        return (await this.selectsVirtual(e.left, v)) && !(await this.selectsVirtual(e.right, v));
      case 'refined':
        return (await this.selectsVirtual(e.focus, v)) && (await this.holdsVirtual(await this.compile(e.refinement, false), v, undefined));
      case 'filtered': {
        if (!(await this.selectsVirtual(e.focus, v))) return false;
        if (e.filter.kind === 'description') return false;
        for (const f of e.filter.filters) {
          const eq = f.operator === '=';
          if (f.type === 'active') {
            if (f.value !== eq) return false;
          } else if (f.type === 'definitionStatusToken' || f.type === 'definitionStatusId') {
            const set = f.type === 'definitionStatusId' ? await this.conceptSet(f.value) : this.ids(f.tokens.map((t) => (t === 'primitive' ? SCT.primitive : SCT.defined)));
            if (v.definitionStatus === undefined || set.has(v.definitionStatus) !== eq) return false;
          } else return false;
        }
        return true;
      }
      case 'history':
        return this.selectsVirtual(e.focus, v);
    }
  }

  private virtualGroups(v: VirtualConcept): number[] {
    const out = new Set<number>();
    v.attributes.forEach(([g], i) => out.add(g === 0 ? -1 - i : g));
    v.concrete.forEach((c, i) => out.add(c.group === 0 ? -1e9 - i : c.group));
    return [...out];
  }

  private async holdsVirtual(c: Compiled, v: VirtualConcept, group: number | undefined): Promise<boolean> {
    switch (c.kind) {
      case 'and':
        for (const o of c.operands) if (!(await this.holdsVirtual(o, v, group))) return false;
        return true;
      case 'or':
        for (const o of c.operands) if (await this.holdsVirtual(o, v, group)) return true;
        return false;
      case 'group': {
        let n = 0;
        for (const gid of this.virtualGroups(v)) if (await this.holdsVirtual(c.inner, v, gid)) n++;
        return n >= c.min && n <= c.max;
      }
      case 'attribute': {
        let n = 0;
        if (c.concrete) {
          v.concrete.forEach((x, i) => {
            if (group !== undefined && (x.group === 0 ? -1e9 - i : x.group) !== group) return;
            if (c.types.has(x.typeId) && c.concrete!(x.value)) n++;
          });
        } else if (!c.reverse) {
          for (let i = 0; i < v.attributes.length; i++) {
            const [g, t, d] = v.attributes[i];
            if (group !== undefined && (g === 0 ? -1 - i : g) !== group) continue;
            if (!c.types.has(t)) continue;
            // a nested expression value is itself a virtual concept, tested against the value constraint
            const inV = typeof d === 'number' ? c.values!.has(d) : await this.selectsVirtual(c.valueExpr!, d);
            if (inV === c.equals) n++;
          }
        }
        return n >= c.min && n <= c.max;
      }
    }
  }

  // ---- hierarchy -------------------------------------------------------------------------------

  private async hierarchy(op: string, xs: Int32Array): Promise<Int32Array> {
    const g = this.g;
    const gather = async (f: (id: number) => ArrayLike<number>): Promise<ArrayLike<number>[]> => {
      const lists: ArrayLike<number>[] = [];
      for (let i = 0; i < xs.length; i++) {
        const l = f(xs[i]);
        lists.push(l);
        await this.tick(l.length + 1);
      }
      return lists;
    };
    switch (op) {
      case 'descendantOf':
        return this.below(xs, false);
      case 'descendantOrSelfOf':
        return this.below(xs, true);
      case 'childOf':
        return unionMany(await gather((x) => g.children(x)));
      case 'childOrSelfOf':
        return unionMany([xs, ...(await gather((x) => g.children(x)))]);
      case 'ancestorOf':
        return unionMany(await gather((x) => g.ancestors(x)));
      case 'ancestorOrSelfOf':
        return unionMany([xs, ...(await gather((x) => g.ancestors(x)))]);
      case 'parentOf':
        return unionMany(await gather((x) => g.parents(x)));
      case 'parentOrSelfOf':
        return unionMany([xs, ...(await gather((x) => g.parents(x)))]);
      case 'top': {
        // the members none of whose ancestors is a member
        const set = await this.membership(xs);
        const out: number[] = [];
        for (let i = 0; i < xs.length; i++) {
          const anc = g.ancestors(xs[i]);
          await this.tick(anc.length + 1);
          let top = true;
          for (let k = 0; k < anc.length; k++)
            if (set.has(anc[k])) {
              top = false;
              break;
            }
          if (top) out.push(xs[i]);
        }
        return Int32Array.from(out);
      }
      default: {
        // bottom: the members that are no member's ancestor
        const ancestors = unionMany(await gather((x) => g.ancestors(x)));
        return minus(xs, ancestors);
      }
    }
  }

  /**
   * The descendants of a set of concepts (and the concepts themselves with `self`): one walk
   * down the children from all of them at once, each concept visited once whatever the number
   * of starting points and paths, so `< (* MINUS X)` costs the edition once, not once per concept.
   * Every concept and child edge visited is a step.
   */
  private async below(xs: Int32Array, self: boolean): Promise<Int32Array> {
    if (xs.length === 0) return EMPTY;
    const all = this.g.allConcepts();
    const size = Math.max(all.length > 0 ? all[all.length - 1] : 0, xs[xs.length - 1]) + 1;
    await this.tick(size / 64 + 1);
    const seen = new Uint8Array(size);
    const stack: number[] = [];
    let found = 0;
    for (let i = 0; i < xs.length; i++) {
      const x = xs[i];
      if (x < 0 || x >= size) continue;
      if (self && !seen[x]) {
        seen[x] = 1;
        found++;
      }
      stack.push(x);
    }
    // A start reached again from another start is walked again only when not yet walked.
    const walked = new Uint8Array(size);
    while (stack.length > 0) {
      const current = stack.pop() as number;
      if (walked[current]) continue;
      walked[current] = 1;
      const children = this.g.children(current);
      await this.tick(children.length + 1);
      for (let k = 0; k < children.length; k++) {
        const c = children[k];
        if (c < 0 || c >= size) continue;
        if (!seen[c]) {
          seen[c] = 1;
          found++;
        }
        if (!walked[c]) stack.push(c);
      }
    }
    await this.tick(size / 64 + found);
    const out = new Int32Array(found);
    let n = 0;
    for (let x = 0; x < size && n < found; x++) if (seen[x]) out[n++] = x;
    return out;
  }

  /** A membership test of a set, its building counted. */
  private async membership(ids: Int32Array): Promise<Membership> {
    await this.tick(ids.length / 8 + 1);
    return new Membership(ids);
  }

  // ---- member of -------------------------------------------------------------------------------

  private async memberOf(e: Extract<Expression, { type: 'memberOf' }>): Promise<Int32Array> {
    const refsets = e.refsets.type === 'any' ? fromSorted(this.g.refsets()) : await this.eval(e.refsets);
    const simple = e.fields === undefined && e.memberFilters.length === 0;
    const lists: ArrayLike<number>[] = [];
    const gathered: number[] = [];
    for (let i = 0; i < refsets.length; i++) {
      const r = refsets[i];
      if (!this.g.isRefset(r)) continue;
      if (simple) {
        const m = this.g.refsetMembers(r);
        await this.tick(m.length + 1);
        lists.push(m);
        continue;
      }
      if (!this.g.refsetMemberRows) throw new EclUnsupportedError('member filters and refset field selection are not supported by this edition');
      const pass = await this.memberFilters(e.memberFilters);
      for (const row of this.g.refsetMemberRows(r)) {
        this.work.add(1);
        if (this.work.due) await this.work.pause();
        if (!pass(row)) continue;
        const values = e.fields === undefined ? [row.referencedComponentId] : e.fields === '*' ? Object.values(row.fields) : e.fields.map((f) => (f === 'referencedComponentId' ? row.referencedComponentId : row.fields[f]));
        for (const v of values) {
          if (typeof v !== 'string') continue;
          const id = this.g.resolve(v);
          if (id !== undefined) gathered.push(id);
        }
      }
    }
    if (gathered.length) lists.push(fromUnsorted(gathered));
    return unionMany(lists);
  }

  private async memberFilters(blocks: readonly (readonly MemberFilter[])[]): Promise<(row: EclRefsetMember) => boolean> {
    const tests: Array<(row: EclRefsetMember) => boolean> = [];
    let activeSaid = false;
    for (const block of blocks)
      for (const f of block) {
        switch (f.type) {
          case 'module': {
            const set = await this.conceptSet(f.value);
            tests.push((r) => set.has(r.moduleId) === (f.operator === '='));
            break;
          }
          case 'effectiveTime':
            tests.push((r) => compareTime(r.effectiveTime, f.operator, f.times));
            break;
          case 'active':
            activeSaid = true;
            tests.push((r) => (r.active === f.value) === (f.operator === '='));
            break;
          case 'field': {
            const v = f.value;
            const name = f.field;
            const get = (r: EclRefsetMember) => (name === 'referencedComponentId' ? r.referencedComponentId : r.fields[name]);
            if (v.kind === 'expression') {
              const set = await this.membership(await this.eval(v.value));
              tests.push((r) => {
                const x = get(r);
                const id = typeof x === 'string' ? this.g.resolve(x) : undefined;
                return (id !== undefined && set.has(id)) === (f.operator === '=');
              });
            } else if (v.kind === 'number') tests.push((r) => compareNumber(toNumber(get(r)), f.operator, v.value));
            else if (v.kind === 'boolean') tests.push((r) => (get(r) === v.value) === (f.operator === '='));
            else if (v.kind === 'time') tests.push((r) => compareTime(toNumber(get(r)) ?? 0, f.operator, v.value));
            else {
              const match = stringMatcher(v.value);
              tests.push((r) => {
                const x = get(r);
                return (typeof x === 'string' && match(x)) === (f.operator === '=');
              });
            }
            break;
          }
        }
      }
    if (!activeSaid) tests.push((r) => r.active);
    return (row) => tests.every((t) => t(row));
  }

  // ---- history ---------------------------------------------------------------------------------

  private async history(e: Extract<Expression, { type: 'history' }>): Promise<Int32Array> {
    const focus = await this.eval(e.focus);
    if (!this.g.historicalSources) return focus;
    let refsets: Membership | undefined;
    if (e.subset) refsets = await this.membership(await this.eval(e.subset));
    else if (e.profile === 'min' || e.profile === 'mod') {
      const ids = (e.profile === 'min' ? HISTORY_MIN : HISTORY_MOD).map((s) => this.g.resolve(s)).filter((x): x is number => x !== undefined);
      refsets = new Membership(fromUnsorted(ids));
    }
    const out: number[] = [];
    for (let i = 0; i < focus.length; i++) {
      const pairs = this.g.historicalSources(focus[i]);
      await this.tick(pairs.length / 2 + 1);
      for (let k = 0; k < pairs.length; k += 2) if (!refsets || refsets.has(pairs[k])) out.push(pairs[k + 1]);
    }
    return union(focus, fromUnsorted(out));
  }

  // ---- refinements -----------------------------------------------------------------------------

  private async refine(focus: Int32Array, r: Refinement): Promise<Int32Array> {
    return this.refineSet(await this.compile(r, false), focus);
  }

  /**
   * The focus concepts that satisfy a refinement outside any group. A conjunction filters its
   * operands in turn, a disjunction unites them; an attribute whose values are fewer than the
   * focus is counted by walking the values' incoming relationships (exact, including the
   * concepts with none); anything else is checked concept by concept.
   */
  private async refineSet(c: Compiled, focus: Int32Array): Promise<Int32Array> {
    if (c.kind === 'and') {
      let acc = focus;
      for (const o of c.operands) if (acc.length) acc = await this.refineSet(o, acc);
      return acc;
    }
    if (c.kind === 'or') {
      const parts: Int32Array[] = [];
      for (const o of c.operands) parts.push(await this.refineSet(o, focus));
      await this.tick(parts.reduce((n, p) => n + p.length, 0));
      return unionMany(parts);
    }
    if (c.kind === 'attribute' && c.valueIds && c.equals && c.valueIds.length <= focus.length) {
      const counts = new Map<number, number>();
      for (let i = 0; i < c.valueIds.length; i++) {
        const v = c.valueIds[i];
        const rels = c.reverse ? this.g.attributes(v) : this.g.incoming(v);
        await this.tick(rels.length / 3 + 1);
        for (let k = 0; k < rels.length; k += 3) if (c.types.has(rels[k + 1])) counts.set(rels[k + 2], (counts.get(rels[k + 2]) ?? 0) + 1);
      }
      if (c.min === 0) {
        await this.tick(focus.length);
        return focus.filter((id) => (counts.get(id) ?? 0) <= c.max);
      }
      const hits = fromUnsorted([...counts.keys()].filter((id) => {
        const n = counts.get(id)!;
        return n >= c.min && n <= c.max;
      }));
      await this.tick(hits.length + focus.length);
      return intersect(focus, hits);
    }
    let candidates = focus;
    const pre = await this.prefilter(c, focus.length);
    if (pre) {
      await this.tick(pre.length + focus.length);
      candidates = intersect(focus, pre);
    }
    const out: number[] = [];
    for (let i = 0; i < candidates.length; i++) {
      const id = candidates[i];
      if (this.holds(c, id, undefined)) out.push(id);
      if (this.work.due) await this.work.pause();
    }
    return Int32Array.from(out);
  }

  private async compile(r: Refinement, inGroup: boolean): Promise<Compiled> {
    switch (r.type) {
      case 'refinementAnd':
      case 'refinementOr': {
        const operands: Compiled[] = [];
        for (const o of r.operands) operands.push(await this.compile(o, inGroup));
        return { kind: r.type === 'refinementAnd' ? 'and' : 'or', operands };
      }
      case 'group':
        return { kind: 'group', min: r.cardinality?.min ?? 1, max: r.cardinality?.max ?? Infinity, inner: await this.compile(r.attributes, true) };
      case 'attribute': {
        const types = await this.membership(await this.eval(r.name));
        const base = { kind: 'attribute' as const, min: r.cardinality?.min ?? 1, max: r.cardinality?.max ?? Infinity, reverse: r.reverse, types };
        const v = r.value;
        if (v.kind === 'expression') {
          const ids = await this.eval(v.value);
          return { ...base, values: new Membership(ids), valueIds: ids, valueExpr: v.value, equals: v.operator === '=' };
        }
        return { ...base, equals: true, concrete: concreteTest(v) };
      }
    }
  }

  /**
   * A superset of the concepts that can satisfy the refinement, when one is cheap to find (an
   * attribute that must occur at least once, with a value set no larger than the focus):
   * walking the values' incoming relationships beats scanning every focus concept.
   */
  private async prefilter(c: Compiled, focusSize: number): Promise<Int32Array | undefined> {
    switch (c.kind) {
      case 'attribute': {
        if (c.min < 1 || !c.valueIds || !c.equals || c.valueIds.length > focusSize) return undefined;
        const out: number[] = [];
        for (let i = 0; i < c.valueIds.length; i++) {
          const v = c.valueIds[i];
          const rels = c.reverse ? this.g.attributes(v) : this.g.incoming(v);
          await this.tick(rels.length / 3 + 1);
          for (let k = 0; k < rels.length; k += 3) if (c.types.has(rels[k + 1])) out.push(rels[k + 2]);
        }
        await this.tick(out.length);
        return fromUnsorted(out);
      }
      case 'group':
        return c.min >= 1 ? this.prefilter(c.inner, focusSize) : undefined;
      case 'and': {
        let acc: Int32Array | undefined;
        for (const o of c.operands) {
          const p = await this.prefilter(o, acc ? Math.min(acc.length, focusSize) : focusSize);
          if (p) acc = acc ? intersect(acc, p) : p;
        }
        return acc;
      }
      case 'or': {
        const parts: Int32Array[] = [];
        for (const o of c.operands) {
          const p = await this.prefilter(o, focusSize);
          if (!p) return undefined;
          parts.push(p);
        }
        return unionMany(parts);
      }
    }
  }

  /** Whether the concept satisfies the refinement (within one group when `group` is given). */
  private holds(c: Compiled, id: number, group: number | undefined): boolean {
    switch (c.kind) {
      case 'and':
        for (const o of c.operands) if (!this.holds(o, id, group)) return false;
        return true;
      case 'or':
        for (const o of c.operands) if (this.holds(o, id, group)) return true;
        return false;
      case 'attribute': {
        const n = this.count(c, id, group);
        return n >= c.min && n <= c.max;
      }
      case 'group': {
        let n = 0;
        for (const gid of this.groupsOf(id)) if (this.holds(c.inner, id, gid)) n++;
        return n >= c.min && n <= c.max;
      }
    }
  }

  /**
   * The role groups of a concept: each non-zero group number, and each ungrouped (group 0)
   * relationship or concrete value as a group of its own (numbered -1-index and -1e9-index).
   */
  private groupsOf(id: number): number[] {
    const rels = this.g.attributes(id);
    const conc = this.g.concreteValues(id);
    this.work.add(rels.length / 3 + conc.length + 1);
    const out: number[] = [];
    for (let k = 0; k < rels.length; k += 3) {
      const g = rels[k] === 0 ? -1 - k / 3 : rels[k];
      if (!out.includes(g)) out.push(g);
    }
    for (let i = 0; i < conc.length; i++) {
      const g = conc[i].group === 0 ? -1e9 - i : conc[i].group;
      if (!out.includes(g)) out.push(g);
    }
    return out;
  }

  private count(c: CompiledAttribute, id: number, group: number | undefined): number {
    let n = 0;
    if (c.concrete) {
      const conc = this.g.concreteValues(id);
      this.work.add(conc.length + 1);
      conc.forEach((v, i) => {
        if (group !== undefined && (v.group === 0 ? -1e9 - i : v.group) !== group) return;
        if (c.types.has(v.typeId) && c.concrete!(v.value)) n++;
      });
      return n;
    }
    if (c.reverse) {
      // reverse attributes are counted over all the relationships pointing here (groups are the source's)
      const rels = this.g.incoming(id);
      this.work.add(rels.length / 3 + 1);
      for (let k = 0; k < rels.length; k += 3) if (c.types.has(rels[k + 1]) && c.values!.has(rels[k + 2]) === c.equals) n++;
      return n;
    }
    const rels = this.g.attributes(id);
    this.work.add(rels.length / 3 + 1);
    for (let k = 0; k < rels.length; k += 3) {
      if (group !== undefined && (rels[k] === 0 ? -1 - k / 3 : rels[k]) !== group) continue;
      if (c.types.has(rels[k + 1]) && c.values!.has(rels[k + 2]) === c.equals) n++;
    }
    return n;
  }

  // ---- filters ---------------------------------------------------------------------------------

  /** A concept-set operand of a filter: a set of references, or an expression (evaluated over all concepts). */
  private async conceptSet(v: ConceptSetOperand): Promise<Membership> {
    if (v.kind === 'set') return new Membership(fromUnsorted(v.concepts.map((c) => this.g.resolve(c.sctid)).filter((x): x is number => x !== undefined)));
    return await this.membership(await this.eval(v.value));
  }

  private ids(sctids: readonly string[]): Membership {
    return new Membership(fromUnsorted(sctids.map((s) => this.g.resolve(s)).filter((x): x is number => x !== undefined)));
  }

  private async conceptFilters(filters: readonly ConceptFilter[]): Promise<(id: number) => boolean> {
    const tests: Array<(id: number) => boolean> = [];
    const g = this.g;
    for (const f of filters) {
      const eq = f.operator === '=';
      switch (f.type) {
        case 'definitionStatusToken': {
          const set = this.ids(f.tokens.map((t) => (t === 'primitive' ? SCT.primitive : SCT.defined)));
          tests.push((id) => set.has(g.definitionStatus(id)) === eq);
          break;
        }
        case 'definitionStatusId': {
          const set = await this.conceptSet(f.value);
          tests.push((id) => set.has(g.definitionStatus(id)) === eq);
          break;
        }
        case 'module': {
          const set = await this.conceptSet(f.value);
          tests.push((id) => set.has(g.moduleId(id)) === eq);
          break;
        }
        case 'effectiveTime':
          tests.push((id) => compareTime(g.effectiveTime(id), f.operator, f.times));
          break;
        case 'active':
          tests.push((id) => (g.isActive(id) === f.value) === eq);
          break;
      }
    }
    return (id) => {
      this.work.add(1);
      return tests.every((t) => t(id));
    };
  }

  private async descriptionFilters(filters: readonly DescriptionFilter[]): Promise<(id: number) => boolean> {
    const tests: Array<(d: EclDescription) => boolean> = [];
    let activeSaid = false;
    // Each description is tested against every search term: that is the work, not the description alone.
    let perDescription = 1;
    for (const f of filters) {
      const eq = f.operator === '=';
      switch (f.type) {
        case 'term': {
          perDescription += termCost(f.terms);
          const match = termMatcher(f.terms);
          tests.push((d) => match(d.term) === eq);
          break;
        }
        case 'language': {
          const codes = new Set(f.codes);
          tests.push((d) => codes.has(d.languageCode.toLowerCase()) === eq);
          break;
        }
        case 'typeId': {
          const set = await this.conceptSet(f.value);
          tests.push((d) => set.has(d.typeId) === eq);
          break;
        }
        case 'typeToken': {
          const set = this.ids(f.tokens.map((t) => (t === 'fsn' ? SCT.fsn : t === 'syn' ? SCT.synonym : SCT.definition)));
          tests.push((d) => set.has(d.typeId) === eq);
          break;
        }
        case 'dialect': {
          const test = await this.dialectTest(f);
          tests.push((d) => test(d) === eq);
          break;
        }
        case 'module': {
          const set = await this.conceptSet(f.value);
          tests.push((d) => set.has(d.moduleId) === eq);
          break;
        }
        case 'effectiveTime':
          tests.push((d) => compareTime(d.effectiveTime, f.operator, f.times));
          break;
        case 'active':
          activeSaid = true;
          tests.push((d) => (d.active === f.value) === eq);
          break;
        case 'id': {
          const ids = new Set(f.ids);
          tests.push((d) => ids.has(d.sctid) === eq);
          break;
        }
      }
    }
    if (!activeSaid) tests.push((d) => d.active);
    return (id) => {
      const ds = this.g.descriptions(id);
      this.work.add(ds.length * perDescription + 1);
      return ds.some((d) => tests.every((t) => t(d)));
    };
  }

  /** Whether a description is in one of the filter's dialects with an allowed acceptability. */
  private async dialectTest(f: Extract<DescriptionFilter, { type: 'dialect' }>): Promise<(d: EclDescription) => boolean> {
    const overall = this.acceptabilityIds(f.acceptability);
    const wanted = new Map<number, Set<number> | undefined>();
    const add = (refset: number | undefined, acc: Set<number> | undefined) => {
      if (refset === undefined) return;
      const allowed = acc ?? overall;
      if (wanted.has(refset) && (wanted.get(refset) === undefined || allowed === undefined)) wanted.set(refset, undefined);
      else wanted.set(refset, allowed ? new Set([...(wanted.get(refset) ?? []), ...allowed]) : undefined);
    };
    if (f.expression) {
      const set = await this.eval(f.expression);
      for (const r of set) add(r, undefined);
    }
    for (const d of f.dialects) {
      const acc = this.acceptabilityIds(d.acceptability);
      if (d.alias !== undefined) {
        const sctid = this.g.dialectAlias?.(d.alias) ?? DIALECT_ALIASES[d.alias];
        add(sctid === undefined ? undefined : this.g.resolve(sctid), acc);
      } else if (d.concept) add(this.g.resolve(d.concept.sctid), acc);
    }
    return (d) => {
      const a = d.acceptability;
      for (let k = 0; k < a.length; k += 2) {
        if (!wanted.has(a[k])) continue;
        const allowed = wanted.get(a[k]);
        if (!allowed || allowed.has(a[k + 1])) return true;
      }
      return false;
    };
  }

  private acceptabilityIds(a: Acceptability | undefined): Set<number> | undefined {
    if (!a) return undefined;
    const sctids = a.kind === 'tokens' ? a.tokens.map((t) => (t === 'prefer' ? SCT.preferred : SCT.acceptable)) : a.concepts.map((c) => c.sctid);
    return new Set(sctids.map((s) => this.g.resolve(s)).filter((x): x is number => x !== undefined));
  }
}

// ---- comparisons -------------------------------------------------------------------------------

function compareNumber(x: number | undefined, op: ComparisonOperator, y: number): boolean {
  if (x === undefined || Number.isNaN(x)) return false;
  switch (op) {
    case '=':
      return x === y;
    case '!=':
      return x !== y;
    case '<':
      return x < y;
    case '<=':
      return x <= y;
    case '>':
      return x > y;
    case '>=':
      return x >= y;
  }
}

/** `=` any of the times; `!=` none of them; an order against every one. */
function compareTime(t: number, op: ComparisonOperator, times: readonly number[]): boolean {
  if (op === '=') return times.includes(t);
  if (op === '!=') return !times.includes(t);
  return times.every((y) => compareNumber(t, op, y));
}

function toNumber(v: string | number | boolean | undefined): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  return undefined;
}

function concreteTest(v: Exclude<AttributeValue, { kind: 'expression' }>): (x: number | string | boolean) => boolean {
  switch (v.kind) {
    case 'number':
      return (x) => typeof x === 'number' && compareNumber(x, v.operator, v.value);
    case 'boolean':
      return (x) => typeof x === 'boolean' && (x === v.value) === (v.operator === '=');
    case 'string': {
      const match = stringMatcher(v.value);
      return (x) => typeof x === 'string' && match(x) === (v.operator === '=');
    }
  }
}

const WORD_SPLIT = /[^\p{L}\p{N}]+/u;

/** The lower-cased words of a text (letters and digits; anything else separates). */
export function termWords(text: string): string[] {
  return text
    .toLowerCase()
    .split(WORD_SPLIT)
    .filter((w) => w !== '');
}

/**
 * A wildcard pattern against a whole text, any case: the first piece must start it, the last end
 * it, the others follow in order (leftmost matches suffice for `*`), so the cost is linear in
 * the text whatever the pattern (no regular expression to backtrack).
 */
function wildMatcher(segments: readonly string[]): (text: string) => boolean {
  const parts = segments.map((p) => p.toLowerCase());
  const first = parts[0];
  const last = parts[parts.length - 1];
  return (text) => {
    const s = text.toLowerCase();
    if (parts.length === 1) return s === first;
    if (s.length < first.length + last.length || !s.startsWith(first) || !s.endsWith(last)) return false;
    let at = first.length;
    const end = s.length - last.length;
    for (let i = 1; i < parts.length - 1; i++) {
      const found = s.indexOf(parts[i], at);
      if (found < 0 || found + parts[i].length > end) return false;
      at = found + parts[i].length;
    }
    return true;
  };
}

/** The steps of testing one description against search terms: a word or a wildcard piece each. */
function termCost(terms: readonly SearchTerm[]): number {
  let n = 0;
  for (const t of terms) n += 1 + (t.mode === 'wild' ? t.segments.length : t.words.length);
  return n;
}

/** Term filters: `match` is every search word a prefix of a word of the term, `wild` the whole term against the pattern; any case. */
export function termMatcher(terms: readonly SearchTerm[]): (term: string) => boolean {
  const tests = terms.map((t): ((term: string, words: string[]) => boolean) => {
    if (t.mode === 'wild') return wildMatcher(t.segments);
    const wanted = t.words.flatMap((w) => termWords(w));
    if (!wanted.length) {
      // only punctuation: found as written, any case
      const text = t.words.join(' ').toLowerCase();
      return (term) => term.toLowerCase().includes(text);
    }
    return (_term, words) => wanted.every((w) => words.some((x) => x.startsWith(w)));
  });
  return (term) => {
    const words = termWords(term);
    return tests.some((t) => t(term, words));
  };
}

/** String values (concrete values, refset fields): a bare `"…"` is the whole value, exactly; `match:` and `wild:` as in term filters. */
function stringMatcher(terms: readonly SearchTerm[]): (value: string) => boolean {
  const tests = terms.map((t): ((v: string) => boolean) => {
    if (t.mode === 'match' && !t.keyword) {
      const exact = t.text.replace(/\\(["\\])/g, '$1');
      return (v) => v === exact;
    }
    return termMatcher([t]);
  });
  return (v) => tests.some((t) => t(v));
}

