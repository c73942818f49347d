import fhirpath from 'fhirpath';
import r4 from 'fhirpath/fhir-context/r4';
import type { SearchParameter } from '@medplum/fhirtypes';
import { searchParameterMap, searchParametersFor, searchParametersGeneration } from '../../fhir/definitions.js';
import { compileFast, compileFastRelative, distinct, splitUnion, type FastNode } from './fast-path.js';

/** The index table (suffix of `search_<table>`) of each searchable SearchParameter type. */
export type IndexTable = 'string' | 'token' | 'reference' | 'date' | 'number' | 'quantity' | 'uri';

const TABLE_OF: Record<string, IndexTable | undefined> = {
  string: 'string',
  token: 'token',
  reference: 'reference',
  date: 'date',
  number: 'number',
  quantity: 'quantity',
  uri: 'uri',
};

/** Parameters answered from columns of `resource` itself, so they are never indexed. */
export const COLUMN_PARAMETERS = new Set(['_id', '_lastUpdated']);

/** A SearchParameter ready for extraction: its expression compiled for one resource type. */
export interface IndexedParameter {
  code: string;
  table: IndexTable;
  /** Evaluates the expression; returns fhirpath nodes (or plain values for computed results). */
  evaluate: (resource: unknown) => unknown[];
}

/** The table a SearchParameter's values go to; undefined for composite and special. */
export function tableFor(sp: SearchParameter): IndexTable | undefined {
  return TABLE_OF[sp.type ?? ''];
}

/** The SearchParameter `code` of a resource type, if the type has one. */
export function searchParameter(resourceType: string, code: string): SearchParameter | undefined {
  return searchParametersFor(resourceType).get(code);
}

/**
 * `resolve()` cannot fetch anything during a write, so it is answered from the reference text
 * alone: `Patient/1` resolves to `{resourceType: 'Patient', id: '1'}`. That is all search
 * expressions ask of it (`.resolve().resourceType`).
 */
const resolveFromReference = {
  fn: (coll: unknown[]) =>
    coll.flatMap((item) => {
      const data = fhirpath.util.valData(item) as unknown;
      const ref = typeof data === 'string' ? data : (data as { reference?: unknown } | null)?.reference;
      const m = typeof ref === 'string' ? /([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[^/]+)?$/.exec(ref) : null;
      return m ? [{ resourceType: m[1], id: m[2] }] : [];
    }),
  arity: { 0: [] },
};

const OPTIONS = { resolveInternalTypes: false, userInvocationTable: { resolve: resolveFromReference } } as const;

const cache = new Map<string, IndexedParameter[]>();
let cachedGeneration = 0;

/** Forgets the compiled parameters when stored SearchParameters were added since (fhir/definitions.ts addSearchParameters). */
function current(): void {
  if (cachedGeneration === searchParametersGeneration()) return;
  cachedGeneration = searchParametersGeneration();
  cache.clear();
  compositeCache.clear();
  byUrl = undefined;
}

/**
 * The indexed parameters of a resource type, compiled once per process. Expressions that do
 * not compile are left out (they would fail on every write); composite and special
 * parameters, and those without an expression, are not indexed.
 */
export function indexedParameters(resourceType: string): IndexedParameter[] {
  current();
  let list = cache.get(resourceType);
  if (list) return list;
  list = [];
  for (const [code, sp] of searchParametersFor(resourceType)) {
    const table = tableFor(sp);
    if (!table || !sp.expression || COLUMN_PARAMETERS.has(code)) continue;
    // Each branch of a union is compiled on its own and the results are concatenated: the
    // engine's `|` removes duplicates pairwise, which is quadratic (a ValueSet listing 100k
    // codes took minutes). Duplicates are removed later, in linear time, on the rows.
    // A branch that does not compile, or throws on a resource, contributes nothing.
    const branches = splitTopLevelUnion(expressionFor(resourceType, sp.expression)).flatMap(compileOrSkip);
    if (branches.length === 0) continue;
    list.push({ code, table, evaluate: (resource) => branches.flatMap((branch) => evaluateOrSkip(branch, resource)) });
  }
  cache.set(resourceType, list);
  return list;
}

type Compiled = (resource: unknown) => unknown;

function compileOrSkip(expression: string): Compiled[] {
  let engine: Compiled;
  try {
    engine = fhirpath.compile(expression, r4, OPTIONS) as Compiled;
  } catch {
    return [];
  }
  // The plain forms are walked directly (fast-path.ts); the engine answers what that cannot.
  const fast = compileFast(expression);
  return [fast ? (resource) => fast(resource) ?? engine(resource) : engine];
}

function evaluateOrSkip(branch: Compiled, resource: unknown): unknown[] {
  try {
    const result = branch(resource);
    return Array.isArray(result) ? result : [];
  } catch {
    return [];
  }
}

/**
 * Narrows an R4 expression to the branches that concern `resourceType`. Shared parameters list
 * every type (`AllergyIntolerance.code | Condition.code | Observation.code | …`); keeping only
 * `Observation.code` makes extraction for an Observation several times cheaper.
 * `where(resolve() is Patient)` becomes a match on the reference text (`Patient/…` under any
 * base), since nothing can be fetched during a write.
 */
export function expressionFor(resourceType: string, expression: string): string {
  const branches = splitTopLevelUnion(expression);
  const mine = branches.filter((b) => {
    const head = /^\(*\s*([A-Za-z]+)/.exec(b)?.[1];
    return head === resourceType || head === 'Resource' || head === 'DomainResource';
  });
  // `Resource.meta.tag` → `User.meta.tag`: the R4 model does not know the admin types are resources.
  const kept = (mine.length > 0 ? mine : branches)
    .map((b) => b.replace(/^(\(*\s*)(?:Resource|DomainResource)\./, `$1${resourceType}.`))
    .join(' | ');
  return kept.replace(
    /where\(\s*resolve\(\)\s+is\s+([A-Z][A-Za-z]+)\s*\)/g,
    (_m, type: string) => `where(reference.matches('(^|/)${type}/[-.A-Za-z0-9]+(/_history/[^/]+)?$'))`,
  );
}

/** Splits on `|` outside parentheses and string literals. */
export function splitTopLevelUnion(expression: string): string[] {
  return splitUnion(expression).filter((p) => p.length > 0);
}

/** True when a token parameter indexes Identifiers (`:of-type` applies: docs/rest.md#modifiers). */
export function identifierParameter(sp: SearchParameter): boolean {
  return sp.type === 'token' && /\.identifier\b/.test(sp.expression ?? '');
}

/** Most repetitions of a composite's base element indexed per resource (e.g. Observation.component). */
export const MAX_COMPOSITE_ITEMS = 100;

/** One component of a composite parameter: the table of its own parameter, its expression relative to the base. */
export interface CompositeComponent {
  table: IndexTable;
  /** The component parameter's code (for error texts). */
  code: string;
  expression: string;
}

let byUrl: Map<string, SearchParameter> | undefined;

/**
 * The components of a composite SearchParameter (docs/rest.md#composite-parameters), each with
 * the index table of the parameter it names; undefined when it is not a composite or a component
 * cannot be indexed (its parameter unknown or itself not indexable).
 */
export function compositeComponents(sp: SearchParameter): CompositeComponent[] | undefined {
  if (sp.type !== 'composite' || !sp.expression || !sp.component?.length) return undefined;
  current();
  if (!byUrl) {
    byUrl = new Map();
    for (const params of searchParameterMap().values()) for (const p of params.values()) if (p.url) byUrl.set(p.url, p);
  }
  const out: CompositeComponent[] = [];
  for (const c of sp.component) {
    const target = c.definition ? byUrl.get(c.definition) : undefined;
    const table = target ? tableFor(target) : undefined;
    if (!target || !table || !c.expression) return undefined;
    out.push({ table, code: target.code ?? '', expression: c.expression });
  }
  return out;
}

/** A composite parameter ready for extraction: how many base items, and each component's values of item `i`. */
export interface IndexedComposite {
  code: string;
  tables: IndexTable[];
  count: (resource: unknown) => number;
  /** Values of component `k` of base item `i`. */
  evaluate: (resource: unknown, i: number, k: number) => unknown[];
}

const compositeCache = new Map<string, IndexedComposite[]>();

/**
 * The composite parameters of a resource type, compiled once: `(<base>).count()` and, per
 * component, `(<base>)[%i].select(<component expression>)` — the item's own values, so the
 * components of one match come from the same element (one `component` of an Observation).
 */
export function indexedComposites(resourceType: string): IndexedComposite[] {
  current();
  let list = compositeCache.get(resourceType);
  if (list) return list;
  list = [];
  for (const [code, sp] of searchParametersFor(resourceType)) {
    const components = compositeComponents(sp);
    if (!components) continue;
    const base = expressionFor(resourceType, sp.expression as string);
    const fast = fastComposite(base, components);
    if (fast) {
      list.push({ code, tables: components.map((c) => c.table), ...fast });
      continue;
    }
    try {
      const count = fhirpath.compile(`(${base}).count()`, r4, OPTIONS) as Compiled;
      const parts = components.map((c) => fhirpath.compile(`(${base})[%i].select(${c.expression})`, r4, OPTIONS) as (resource: unknown, env: Record<string, unknown>) => unknown);
      list.push({
        code,
        tables: components.map((c) => c.table),
        count: (resource) => {
          const n = (count(resource) as unknown[])[0];
          return typeof n === 'number' ? n : 0;
        },
        evaluate: (resource, i, k) => {
          try {
            const result = parts[k](resource, { i });
            return Array.isArray(result) ? (result as unknown[]) : [];
          } catch {
            return [];
          }
        },
      });
    } catch {
      continue; // an expression that does not compile indexes nothing
    }
  }
  compositeCache.set(resourceType, list);
  return list;
}

/**
 * A composite whose base and components are all plain expressions (fast-path.ts): the base items
 * of a resource are found once (kept for the calls about the same resource), each component from
 * its item. Undefined when one is not plain; a resource the fast path cannot mirror goes to the
 * engine as a whole.
 */
function fastComposite(
  base: string,
  components: CompositeComponent[],
): Pick<IndexedComposite, 'count' | 'evaluate'> | undefined {
  const branches = splitTopLevelUnion(base).map((b) => compileFast(b));
  const parts = components.map((c) => compileFastRelative(c.expression));
  if (branches.some((b) => !b) || parts.some((p) => !p)) return undefined;
  let engine: IndexedComposite | undefined;
  const slow = (): IndexedComposite => {
    if (!engine) {
      const count = fhirpath.compile(`(${base}).count()`, r4, OPTIONS) as Compiled;
      const selects = components.map((c) => fhirpath.compile(`(${base})[%i].select(${c.expression})`, r4, OPTIONS) as (r: unknown, env: Record<string, unknown>) => unknown);
      engine = {
        code: '',
        tables: [],
        count: (r) => {
          const n = (count(r) as unknown[])[0];
          return typeof n === 'number' ? n : 0;
        },
        evaluate: (r, i, k) => {
          try {
            const result = selects[k](r, { i });
            return Array.isArray(result) ? (result as unknown[]) : [];
          } catch {
            return [];
          }
        },
      };
    }
    return engine;
  };
  let lastResource: unknown;
  let lastItems: FastNode[] | undefined;
  const items = (resource: unknown): FastNode[] | undefined => {
    if (resource !== lastResource) {
      lastResource = resource;
      const found: FastNode[] = [];
      lastItems = found;
      for (const branch of branches) {
        const nodes = branch?.(resource);
        if (!nodes) {
          lastItems = undefined;
          break;
        }
        found.push(...nodes);
      }
      // The engine's `|` keeps equal items once: so does this.
      if (lastItems && branches.length > 1) lastItems = distinct(found);
    }
    return lastItems;
  };
  return {
    count: (resource) => items(resource)?.length ?? slow().count(resource),
    evaluate: (resource, i, k) => {
      const list = items(resource);
      if (!list) return slow().evaluate(resource, i, k);
      const item = list[i];
      if (!item) return [];
      return parts[k]?.(item) ?? slow().evaluate(resource, i, k);
    },
  };
}
