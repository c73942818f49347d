import { IS_A, SCT, type EclConcreteValue, type EclDescription, type EclGraph, type EclRefsetMember, type IdList } from './graph.js';

/**
 * A small EclGraph built from plain objects: the reference implementation of the interface
 * (docs/terminology.md#snomed-ct-expression-constraints-ecl), used by the tests and by the
 * expression checker's tests. Fine for thousands of concepts, not for an edition: the snomed
 * provider has its own index.
 */

export interface MemoryDescription {
  readonly sctid: string;
  readonly term: string;
  readonly languageCode?: string;
  /** Type SCTID; synonym when absent. */
  readonly typeId?: string;
  readonly active?: boolean;
  readonly moduleId?: string;
  readonly effectiveTime?: number;
  /** Language refset SCTID → acceptability. */
  readonly acceptability?: Readonly<Record<string, 'preferred' | 'acceptable'>>;
}

export interface MemoryConcept {
  readonly sctid: string;
  readonly active?: boolean;
  /** Primitive when absent. */
  readonly defined?: boolean;
  readonly moduleId?: string;
  readonly effectiveTime?: number;
  /** |is a| targets. */
  readonly parents?: readonly string[];
  /** `[group, typeSctid, destinationSctid]`. */
  readonly attributes?: ReadonlyArray<readonly [number, string, string]>;
  /** `[group, typeSctid, value]`. */
  readonly concrete?: ReadonlyArray<readonly [number, string, number | string | boolean]>;
  readonly descriptions?: readonly MemoryDescription[];
}

export interface MemoryMember {
  readonly referencedComponentId: string;
  readonly active?: boolean;
  readonly moduleId?: string;
  readonly effectiveTime?: number;
  readonly fields?: Readonly<Record<string, string | number | boolean>>;
}

export interface MemoryEdition {
  readonly concepts: readonly MemoryConcept[];
  /** Refset SCTID → members. */
  readonly refsets?: Readonly<Record<string, readonly MemoryMember[]>>;
  /** `[associationRefsetSctid, inactiveSourceSctid, targetSctid]`. */
  readonly associations?: ReadonlyArray<readonly [string, string, string]>;
  readonly defaultModule?: string;
}

const CORE_MODULE = '900000000000207008';

export class MemoryGraph implements EclGraph {
  private readonly ids = new Map<string, number>();
  private readonly sctids: string[] = [];
  private readonly concepts: Int32Array;
  private readonly data: MemoryConcept[] = [];
  private readonly parentLists: Int32Array[] = [];
  private readonly childLists: number[][] = [];
  private readonly ancestorLists = new Map<number, Int32Array>();
  private readonly descendantLists = new Map<number, Int32Array>();
  private readonly attrs: number[][] = [];
  private readonly inc: number[][] = [];
  private readonly conc: EclConcreteValue[][] = [];
  private readonly descs: EclDescription[][] = [];
  private readonly members = new Map<number, Int32Array>();
  private readonly rows = new Map<number, EclRefsetMember[]>();
  private readonly history: number[][] = [];
  private readonly defaultModule: string;

  constructor(edition: MemoryEdition) {
    this.defaultModule = edition.defaultModule ?? CORE_MODULE;
    for (const c of edition.concepts) this.idOf(c.sctid);
    const conceptIds = edition.concepts.map((c) => this.idOf(c.sctid));
    this.concepts = Int32Array.from(new Set(conceptIds)).sort();
    for (const c of edition.concepts) this.data[this.idOf(c.sctid)] = c;
    for (const c of edition.concepts) {
      const id = this.idOf(c.sctid);
      const active = c.active !== false;
      this.parentLists[id] = Int32Array.from(new Set(active ? (c.parents ?? []).map((p) => this.idOf(p)) : [])).sort();
      const a: number[] = [];
      for (const [g, t, d] of active ? (c.attributes ?? []) : []) a.push(g, this.idOf(t), this.idOf(d));
      this.attrs[id] = a;
      this.conc[id] = (active ? (c.concrete ?? []) : []).map(([group, t, value]) => ({ group, typeId: this.idOf(t), value }));
      this.descs[id] = (c.descriptions ?? []).map((d) => ({
        sctid: d.sctid,
        active: d.active !== false,
        term: d.term,
        languageCode: d.languageCode ?? 'en',
        typeId: this.idOf(d.typeId ?? SCT.synonym),
        moduleId: this.idOf(d.moduleId ?? this.defaultModule),
        effectiveTime: d.effectiveTime ?? 0,
        acceptability: Object.entries(d.acceptability ?? {}).flatMap(([r, acc]) => [this.idOf(r), this.idOf(acc === 'preferred' ? SCT.preferred : SCT.acceptable)]),
      }));
      this.idOf(c.moduleId ?? this.defaultModule);
      this.idOf(c.defined ? SCT.defined : SCT.primitive);
    }
    for (const id of this.concepts) {
      for (const p of this.parentLists[id] ?? []) (this.childLists[p] ??= []).push(id);
      const a = this.attrs[id] ?? [];
      for (let k = 0; k < a.length; k += 3) (this.inc[a[k + 2]] ??= []).push(a[k], a[k + 1], id);
    }
    for (const [refset, list] of Object.entries(edition.refsets ?? {})) {
      const r = this.idOf(refset);
      const rows = list.map((m) => ({
        referencedComponentId: m.referencedComponentId,
        active: m.active !== false,
        moduleId: this.idOf(m.moduleId ?? this.defaultModule),
        effectiveTime: m.effectiveTime ?? 0,
        fields: m.fields ?? {},
      }));
      this.rows.set(r, rows);
      this.members.set(r, Int32Array.from(new Set(rows.filter((m) => m.active && this.ids.has(m.referencedComponentId)).map((m) => this.idOf(m.referencedComponentId)))).sort());
    }
    for (const [refset, source, target] of edition.associations ?? []) (this.history[this.idOf(target)] ??= []).push(this.idOf(refset), this.idOf(source));
  }

  private idOf(sctid: string): number {
    let id = this.ids.get(sctid);
    if (id === undefined) {
      id = this.sctids.length;
      this.ids.set(sctid, id);
      this.sctids.push(sctid);
    }
    return id;
  }

  resolve(sctid: string): number | undefined {
    return this.ids.get(sctid);
  }
  sctid(id: number): string {
    return this.sctids[id];
  }
  allConcepts(): IdList {
    return this.concepts;
  }
  isActive(id: number): boolean {
    const c = this.data[id];
    return c !== undefined && c.active !== false;
  }
  definitionStatus(id: number): number {
    return this.ids.get(this.data[id]?.defined ? SCT.defined : SCT.primitive)!;
  }
  moduleId(id: number): number {
    return this.ids.get(this.data[id]?.moduleId ?? this.defaultModule)!;
  }
  effectiveTime(id: number): number {
    return this.data[id]?.effectiveTime ?? 0;
  }
  parents(id: number): IdList {
    return this.parentLists[id] ?? new Int32Array(0);
  }
  children(id: number): IdList {
    return Int32Array.from(this.childLists[id] ?? []).sort();
  }
  ancestors(id: number): IdList {
    let a = this.ancestorLists.get(id);
    if (!a) {
      a = this.closure(id, (x) => this.parents(x));
      this.ancestorLists.set(id, a);
    }
    return a;
  }
  descendants(id: number): IdList {
    let d = this.descendantLists.get(id);
    if (!d) {
      d = this.closure(id, (x) => this.childLists[x] ?? []);
      this.descendantLists.set(id, d);
    }
    return d;
  }
  private closure(id: number, next: (x: number) => ArrayLike<number>): Int32Array {
    const seen = new Set<number>();
    const stack = [id];
    while (stack.length) {
      const x = stack.pop()!;
      const n = next(x);
      for (let i = 0; i < n.length; i++)
        if (!seen.has(n[i])) {
          seen.add(n[i]);
          stack.push(n[i]);
        }
    }
    seen.delete(id);
    return Int32Array.from(seen).sort();
  }
  attributes(id: number): ArrayLike<number> {
    return this.attrs[id] ?? [];
  }
  incoming(id: number): ArrayLike<number> {
    return this.inc[id] ?? [];
  }
  concreteValues(id: number): readonly EclConcreteValue[] {
    return this.conc[id] ?? [];
  }
  isRefset(id: number): boolean {
    return this.members.has(id);
  }
  refsets(): IdList {
    return Int32Array.from(this.members.keys()).sort();
  }
  refsetMembers(refsetId: number): IdList {
    return this.members.get(refsetId) ?? new Int32Array(0);
  }
  refsetMemberRows(refsetId: number): Iterable<EclRefsetMember> {
    return this.rows.get(refsetId) ?? [];
  }
  descriptions(id: number): readonly EclDescription[] {
    return this.descs[id] ?? [];
  }
  historicalSources(id: number): ArrayLike<number> {
    return this.history[id] ?? [];
  }
  /** Alternate identifiers are not kept. */
  resolveAlternate(): number | undefined {
    return undefined;
  }
  /** The |is a| type's id, when the edition names it. */
  isA(): number | undefined {
    return this.ids.get(IS_A);
  }
}
