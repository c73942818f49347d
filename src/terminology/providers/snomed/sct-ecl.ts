import { invalidValueSet } from '../filters.js';
import type { SnomedGraph } from './sct-index.js';

/**
 * ECL in value sets (docs/terminology.md#snomed-ct): a `constraint` / `expression` filter is
 * evaluated on the edition's graph by the ECL evaluator (ecl/); the ids it selects, kept per
 * graph and expression text.
 */
export async function evaluateEclFilter(graph: SnomedGraph, text: string, path: string): Promise<Set<number>> {
  const key = `ecl ${text}`;
  const memo = graph.index.memo.get(key) as Set<number> | undefined;
  if (memo) return memo;
  throw invalidValueSet(`ECL is not supported yet: '${text}'`, path);
}
