import fhirpath from 'fhirpath';
import r4 from 'fhirpath/fhir-context/r4';
import type { SearchParameter } from '@medplum/fhirtypes';
import { searchParametersFor } from '../../fhir/definitions.js';

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

/**
 * The indexed parameters of a resource type, compiled once per process. Expressions that do
 * not compile are left out (they would fail on every write); composite and special
 * parameters, and those without an expression, are not indexed.
 */
export function indexedParameters(resourceType: string): IndexedParameter[] {
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
  try {
    return [fhirpath.compile(expression, r4, OPTIONS) as Compiled];
  } catch {
    return [];
  }
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
  const parts: string[] = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  for (let i = 0; i < expression.length; i++) {
    const c = expression[i];
    if (quoted) {
      if (c === '\\') i++;
      else if (c === "'") quoted = false;
    } else if (c === "'") quoted = true;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === '|' && depth === 0) {
      parts.push(expression.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(expression.slice(start).trim());
  return parts.filter((p) => p.length > 0);
}

/** True when a token parameter indexes Identifiers (`:of-type` applies: docs/rest.md#modifiers). */
export function identifierParameter(sp: SearchParameter): boolean {
  return sp.type === 'token' && /\.identifier\b/.test(sp.expression ?? '');
}
