import { FhirError, issue as fhirIssue } from '../../../fhir/outcome.js';
import { invalidValueSet } from '../filters.js';
import type { Expression } from './ecl/ast.js';
import { eclNeeds, EclTooCostlyError, EclUnsupportedError, evaluateEcl, unknownEclConcepts } from './ecl/evaluate.js';
import { EclSyntaxError, parseEclCached } from './ecl/parser.js';
import type { SnomedGraph } from './sct-index.js';

/**
 * ECL in value sets (docs/terminology.md#snomed-ct): a `constraint` / `expression` filter is
 * parsed and evaluated on the edition's graph by the ECL evaluator (ecl/, which caches results
 * per graph): the active concepts it selects (ECL's substrate). A syntax error is the value set's
 * 400 naming the position; an expression too costly to evaluate is 400 `too-costly`.
 */
export async function evaluateEclFilter(graph: SnomedGraph, text: string, path: string, budget?: number): Promise<SortedIds> {
  let ids: Int32Array;
  try {
    const expression = parseEclCached(text);
    // Description filters on description ids (or an edition loaded before the loader recorded
    // acceptability with each description) read the part of the graph read on first need.
    if (needsDescriptions(expression)) {
      await graph.index.whenLoaded('designations');
      if (needsDescriptionIds(expression) || !graph.acceptabilityRecorded()) await graph.loadDescriptions();
      else graph.registerDialects();
    }
    // ECL naming a concept the edition does not know is an error, not an empty set.
    const unknown = unknownEclConcepts(graph, expression);
    if (unknown.length) throw invalidValueSet(`Unknown concept '${unknown[0]}' in the ECL '${text}'`, path);
    ids = await evaluateEcl(graph, expression, { budget });
  } catch (err) {
    if (err instanceof EclSyntaxError) throw invalidValueSet(`Invalid ECL '${text}': ${err.message}`, path);
    if (err instanceof EclUnsupportedError) throw invalidValueSet(`ECL '${text}' cannot be evaluated: ${err.message}`, path);
    if (err instanceof EclTooCostlyError) throw new FhirError(400, [fhirIssue('too-costly', `${err.message}: '${text.length > 500 ? `${text.slice(0, 500)}…` : text}'`, path)]);
    throw err;
  }
  return new SortedIds(ids);
}

/** Whether an (immutable, cached) expression has description filters, and `id` ones, worked out once per tree. */
const descriptionNeeds = new WeakMap<Expression, { any: boolean; ids: boolean }>();

function needs(expression: Expression): { any: boolean; ids: boolean } {
  let known = descriptionNeeds.get(expression);
  if (!known) {
    let ids = false;
    JSON.stringify(expression, (_k, v: unknown) => {
      if (v && typeof v === 'object' && (v as { type?: unknown }).type === 'id' && Array.isArray((v as { ids?: unknown }).ids)) ids = true;
      return v;
    });
    descriptionNeeds.set(expression, (known = { any: eclNeeds(expression).descriptions, ids }));
  }
  return known;
}

function needsDescriptions(expression: Expression): boolean {
  return needs(expression).any;
}

function needsDescriptionIds(expression: Expression): boolean {
  return needs(expression).ids;
}

/**
 * The ids an expression selects, as the evaluator returns them (sorted, possibly shared with its
 * cache): membership is a binary search, so checking a few codes against a large value set
 * builds nothing per request.
 */
export class SortedIds implements Iterable<number> {
  constructor(private readonly ids: Int32Array) {}

  has(id: number): boolean {
    const ids = this.ids;
    let lo = 0;
    let hi = ids.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (ids[mid] === id) return true;
      if (ids[mid] < id) lo = mid + 1;
      else hi = mid - 1;
    }
    return false;
  }

  get size(): number {
    return this.ids.length;
  }

  [Symbol.iterator](): Iterator<number> {
    return this.ids[Symbol.iterator]();
  }
}
