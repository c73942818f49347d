import type { ValueSet } from '@medplum/fhirtypes';
import { FhirError } from '../../fhir/outcome.js';
import { isImplicitValueSet } from '../providers/implicit-value-sets.js';

/**
 * Errors point at what the caller wrote (docs/terminology.md#implicit-value-sets): an implicit
 * value set (`http://snomed.info/sct?fhir_vs=…`) is named by its URL alone, so an error inside the
 * compose Lattice builds for it carries no `expression` into a `compose` the caller never wrote.
 */
export async function withCallerPaths<T>(vs: ValueSet, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof FhirError && vs.url && isImplicitValueSet(vs.url)) {
      for (const issue of err.outcome.issue ?? []) {
        const kept = issue.expression?.filter((e) => !e.startsWith('ValueSet.compose'));
        if (kept?.length) issue.expression = kept;
        else delete issue.expression;
      }
    }
    throw err;
  }
}
