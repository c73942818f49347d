import { FhirError, issue as fhirIssue } from '../../../fhir/outcome.js';
import { invalidValueSet } from '../filters.js';
import { EclTooCostlyError, EclUnsupportedError, evaluateEcl } from './ecl/evaluate.js';
import { EclSyntaxError, parseEcl } from './ecl/parser.js';
import type { SnomedGraph } from './sct-index.js';

/**
 * ECL in value sets (docs/terminology.md#snomed-ct): a `constraint` / `expression` filter is
 * parsed and evaluated on the edition's graph by the ECL evaluator (ecl/, which caches results
 * per graph): the active concepts it selects (ECL's substrate). A syntax error is the value set's
 * 400 naming the position; an expression too costly to evaluate is 400 `too-costly`.
 */
export async function evaluateEclFilter(graph: SnomedGraph, text: string, path: string): Promise<Set<number>> {
  let ids: Int32Array;
  try {
    const expression = parseEcl(text);
    // Description filters read acceptability and description ids: the part of the graph read on first need.
    if (JSON.stringify(expression).includes('"kind":"description"')) await graph.loadDescriptions();
    ids = await evaluateEcl(graph, expression);
  } catch (err) {
    if (err instanceof EclSyntaxError) throw invalidValueSet(`Invalid ECL '${text}': ${err.message}`, path);
    if (err instanceof EclUnsupportedError) throw invalidValueSet(`ECL '${text}' cannot be evaluated: ${err.message}`, path);
    if (err instanceof EclTooCostlyError) throw new FhirError(400, [fhirIssue('too-costly', `${err.message}: '${text}'`, path)]);
    throw err;
  }
  return new Set(ids);
}
