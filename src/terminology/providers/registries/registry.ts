import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { ValueSetComposeIncludeFilter } from '@medplum/fhirtypes';
import { FhirError, issue } from '../../../fhir/outcome.js';
import { msg } from '../../messages.js';
import type { CodeSystemInfo, Concept, Designation, StoredProperty, TermContext } from '../../types.js';
import { anchored, filterOp, invalidValueSet, textFilterMatcher } from '../filters.js';
import type { CodeSystemProvider, ConceptSelection } from '../provider.js';
import { charge, pace } from './request-budget.js';

/**
 * The code systems built in (docs/terminology.md#code-systems-built-in): a registry or a grammar
 * answers whether a code is one of its codes and what it means, with nothing stored. One
 * provider serves them all: concept ids are the position in the registry's list for a system
 * that can be listed, and are handed out per request for codes a grammar admits (the request's
 * context keeps them, so every provider of the request gives a code the same id).
 */

/** What a registry knows about one of its codes. */
export interface RegistryConcept {
  /** The code as the registry spells it (a case-insensitive system may be asked another spelling). */
  code: string;
  display: string | undefined;
  designations?: Designation[];
  properties?: StoredProperty[];
  inactive?: boolean;
}

/** A predicate over a registry's concepts. */
export type ConceptTest = (concept: RegistryConcept) => boolean;

/** A filter's predicate, which may say why it leaves a concept out (the `message` of `$validate-code`). */
export type FilterTest = ConceptTest & { why?: (concept: RegistryConcept) => string | undefined };

export interface Registry {
  /** The concept a code names, undefined when it is not a code of the system. */
  find(code: string): RegistryConcept | undefined;
  /** Why a code is not a code of the system, when the registry can say (an informational issue of `$validate-code`). */
  reason?(code: string): string | undefined;
  /** Every code, in the system's order, when the system can be listed; absent for a grammar. */
  list?(): string[];
  /** The test of a filter on a property of the registry's own, undefined when the property is not one. */
  filter?(property: string, op: string, value: string, path: string): FilterTest | undefined;
  /** What checking a code costs (a grammar's parse), counted per request by request-budget.ts; free when absent. */
  cost?(code: string): number;
}

/** Per-request ids of the codes a grammar admitted, beyond the listed ones. */
interface Interned {
  byCode: Map<string, number>;
  concepts: RegistryConcept[];
}

/** A registry with its list and the list's index (built once per registry). */
interface Loaded {
  registry: Registry;
  listed: string[];
  listedIndex: Map<string, number>;
}

const loadedRegistries = new WeakMap<Registry, Loaded>();

export class RegistryProvider implements CodeSystemProvider {
  private registry!: Registry;
  private listed: string[] = [];
  private listedIndex = new Map<string, number>();
  private ready: Promise<void> | undefined;

  constructor(
    private readonly tc: TermContext,
    readonly cs: CodeSystemInfo,
    /** The registry (its data is loaded on first use). */
    private readonly load: () => Promise<Registry>,
    /** A grammar's common codes (docs/terminology.md#expanding-a-grammar). */
    readonly commonCodes?: string,
  ) {}

  /** Loads the registry's data the first time a request needs it. */
  private async open(): Promise<void> {
    this.ready ??= this.load().then((registry) => {
      let loaded = loadedRegistries.get(registry);
      if (!loaded) {
        const listed = registry.list?.() ?? [];
        loaded = { registry, listed, listedIndex: new Map(listed.map((code, i) => [code, i + 1])) };
        loadedRegistries.set(registry, loaded);
      }
      this.registry = loaded.registry;
      this.listed = loaded.listed;
      this.listedIndex = loaded.listedIndex;
    });
    return this.ready;
  }

  async findConcepts(codes: string[]): Promise<Map<string, Concept>> {
    await this.open();
    const out = new Map<string, Concept>();
    for (const code of codes) {
      if (out.has(code)) continue;
      const found = this.find(code);
      if (found) out.set(code, this.toConcept(this.idOf(found), found));
      await pace(this.tc);
    }
    return out;
  }

  /** The registry's concept of a code, its cost counted against the request's bound. */
  private find(code: string): RegistryConcept | undefined {
    const cost = this.registry.cost?.(code);
    if (cost) charge(this.tc, this.cs.url, code, cost);
    return this.registry.find(code);
  }

  /**
   * Checks the codes an include lists before its test is compiled (which checks them again, as
   * cache hits): the costly part runs here, counted and paced.
   */
  private async checkListed(selection: ConceptSelection): Promise<void> {
    if (!this.registry.cost) return;
    for (const c of selection.include.concept ?? []) {
      if (c.code !== undefined) this.find(c.code);
      await pace(this.tc);
    }
  }

  async conceptsByIds(ids: number[]): Promise<Concept[]> {
    await this.open();
    return [...new Set(ids)]
      .sort((a, b) => a - b)
      .flatMap((id) => {
        const found = this.byId(id);
        return found ? [this.toConcept(id, found)] : [];
      });
  }

  async designations(ids: number[]): Promise<Map<number, Designation[]>> {
    await this.open();
    const out = new Map<number, Designation[]>();
    for (const id of ids) {
      const list = this.byId(id)?.designations;
      if (list && list.length > 0) out.set(id, list.map((d) => ({ ...d })));
    }
    return out;
  }

  async properties(id: number): Promise<StoredProperty[]> {
    await this.open();
    return [...(this.byId(id)?.properties ?? [])];
  }

  async neighbours(): Promise<Concept[]> {
    return [];
  }

  async isAncestor(): Promise<boolean> {
    return false;
  }

  async selected(selection: ConceptSelection, ids: number[]): Promise<Set<number>> {
    await this.open();
    await this.checkListed(selection);
    const test = this.compile(selection);
    return new Set(ids.filter((id) => {
      const c = this.byId(id);
      return c !== undefined && test(c);
    }));
  }

  /**
   * A concept list, or anything within `within` (for a grammar, its common codes), is tested
   * code by code; the whole system or a filter only when the registry can be listed: a
   * grammar's is refused with 422 `too-costly`.
   */
  async enumerate(selection: ConceptSelection, within?: number[]): Promise<number[]> {
    await this.open();
    await this.checkListed(selection);
    const test = this.compile(selection);
    const matches = selection.text ? textFilterMatcher(selection.text) : undefined;
    const keep = (c: RegistryConcept) => test(c) && (!matches || matches(c.code, [c.display ?? '', ...(c.designations ?? []).map((d) => d.value)]));
    let ids: number[];
    if (within) {
      ids = within;
    } else if (selection.include.concept) {
      ids = selection.include.concept.flatMap((c) => {
        const found = c.code === undefined ? undefined : this.find(c.code);
        return found ? [this.idOf(found)] : [];
      });
    } else if (this.registry.list) {
      ids = this.listed.map((_, i) => i + 1);
    } else {
      throw new FhirError(422, [issue('too-costly', notEnumerable(this.cs.url), selection.path)]);
    }
    return [...new Set(ids)].sort((a, b) => a - b).filter((id) => {
      const c = this.byId(id);
      return c !== undefined && keep(c);
    });
  }

  /** The first reason a filter of the include gives for leaving the concept out. */
  async refusal(selection: ConceptSelection, concept: Concept): Promise<string | undefined> {
    await this.open();
    const found = this.byId(concept.id);
    if (!found) return undefined;
    for (const [j, f] of (selection.include.filter ?? []).entries()) {
      const test = this.filterTest(f, `${selection.path}.filter[${j}]`);
      if (!test(found)) return test.why?.(found);
    }
    return undefined;
  }

  async unknownReason(code: string): Promise<string | undefined> {
    await this.open();
    if (this.registry.reason) this.find(code);
    return this.registry.reason?.(code);
  }

  /** The include as one test: its concept list, its filters (ANDed) and activity. */
  private compile(selection: ConceptSelection): ConceptTest {
    const { include, path, activeOnly } = selection;
    const tests: ConceptTest[] = [];
    if (include.concept) {
      const codes = new Set(include.concept.flatMap((c) => (c.code === undefined ? [] : [this.find(c.code)?.code ?? c.code])));
      tests.push((c) => codes.has(c.code));
    }
    for (const [j, f] of (include.filter ?? []).entries()) tests.push(this.filterTest(f, `${path}.filter[${j}]`));
    if (activeOnly) tests.push((c) => !c.inactive);
    return (c) => tests.every((t) => t(c));
  }

  /** `code`/`concept` `=`, `in`, `not-in`, `regex` for every registry; the registry's own properties after that. */
  private filterTest(f: ValueSetComposeIncludeFilter, path: string): FilterTest {
    const op = filterOp(f) ?? '';
    const property = f.property ?? '';
    if (typeof f.value !== 'string' || f.value === '') throw invalidValueSet(msg.filterNoValue(this.cs.url, property, op), path, 'UNABLE_TO_HANDLE_SYSTEM_FILTER_WITH_NO_VALUE');
    const value = f.value;
    if (property === 'code' || property === 'concept') {
      const spelled = (v: string) => this.find(v)?.code ?? v;
      const list = () => new Set(value.split(',').map((v) => spelled(v.trim())));
      switch (op) {
        case '=': {
          const v = spelled(value);
          return (c) => c.code === v;
        }
        case 'in': {
          const set = list();
          return (c) => set.has(c.code);
        }
        case 'not-in': {
          const set = list();
          return (c) => !set.has(c.code);
        }
        case 'regex': {
          const re = new RegExp(anchored(value, path), 'u');
          return (c) => re.test(c.code);
        }
      }
    }
    const own = this.registry.filter?.(property, op, value, path);
    if (own) return own;
    throw invalidValueSet(msg.filterNotSupported(this.cs.url, property, op), path);
  }

  private toConcept(id: number, c: RegistryConcept): Concept {
    return { id, code: c.code, display: c.display, definition: undefined, inactive: c.inactive === true, abstract: false, status: undefined };
  }

  /** The id of a concept: its place in the list, else one handed out for this request. */
  private idOf(c: RegistryConcept): number {
    const listed = this.listedIndex.get(c.code);
    if (listed !== undefined) return listed;
    const interned = this.interned();
    let id = interned.byCode.get(c.code);
    if (id === undefined) {
      interned.concepts.push(c);
      id = this.listed.length + interned.concepts.length;
      interned.byCode.set(c.code, id);
    }
    return id;
  }

  private byId(id: number): RegistryConcept | undefined {
    if (id >= 1 && id <= this.listed.length) return this.find(this.listed[id - 1]);
    return this.interned().concepts[id - this.listed.length - 1];
  }

  private interned(): Interned {
    let byUrl = requestIds.get(this.tc);
    if (!byUrl) requestIds.set(this.tc, (byUrl = new Map<string, Interned>()));
    let found = byUrl.get(this.cs.url);
    if (!found) byUrl.set(this.cs.url, (found = { byCode: new Map(), concepts: [] }));
    return found;
  }
}

/** The ids handed out in a request, per code system (dropped with the request's context). */
const requestIds = new WeakMap<TermContext, Map<string, Interned>>();

/** The 422 text of a whole-system (or filtered) include of a grammar (docs/terminology.md#code-systems-built-in). */
export function notEnumerable(url: string): string {
  return `The code system '${url}' is a grammar with infinitely many codes: an include of the whole system or by a filter cannot be expanded (list the codes in compose.include.concept)`;
}

const require = createRequire(import.meta.url);

/**
 * A package's JSON data file, read and parsed at run time: the large registries stay out of
 * the server bundle, so a start does not compile them (they are read on a system's first use).
 */
export function packageJson<T>(specifier: string): T {
  return JSON.parse(readFileSync(require.resolve(specifier), 'utf8')) as T;
}

/** A designation in English without a use (the registries' names). */
export function english(value: string, use?: Designation['use']): Designation {
  return { language: 'en', use, value };
}
