import type { CodeableConcept, CodeSystem, CodeSystemConcept, ValueSet } from '@medplum/fhirtypes';
import type { Config } from '../config.js';
import { FhirError, issue } from '../fhir/outcome.js';

/**
 * Bounds on the work one terminology request may ask for (docs/terminology.md#limits), the one
 * place they are defined: filters of one value set's compose (each is a pass over a code
 * system), codings of one `codeableConcept`, and the value sets and includes one evaluation of a
 * value-set graph reaches (counted by engine/compose.ts#Evaluation), and the concepts of a CodeSystem a
 * request supplies inline (indexed in memory for that request). Past them: 400 `too-costly`.
 */
export type TerminologyLimits = Config['terminologyLimits'];

export const DEFAULT_TERMINOLOGY_LIMITS: TerminologyLimits = {
  maxFilters: 50,
  maxCodings: 10_000,
  maxValueSets: 1_000,
  maxIncludes: 5_000,
  maxInlineConcepts: 25_000,
  maxEclSteps: 20_000_000,
  maxUcumCharacters: 20_000,
};

/** The configured bounds of a terminology environment. */
export function terminologyLimits(env: { config?: Pick<Config, 'terminologyLimits'> }): TerminologyLimits {
  return env.config?.terminologyLimits ?? DEFAULT_TERMINOLOGY_LIMITS;
}

/** Filters of `compose.include` and `compose.exclude` together (nested value sets count on their own). */
export function checkComposeFilters(vs: ValueSet, limits: TerminologyLimits): void {
  const compose = vs.compose;
  if (!compose) return;
  let filters = 0;
  for (const part of [...(compose.include ?? []), ...(compose.exclude ?? [])]) filters += Array.isArray(part.filter) ? part.filter.length : 0;
  if (filters > limits.maxFilters) {
    const name = (vs.url ?? (vs.id ? `#${vs.id}` : 'value set')).slice(0, 200);
    throw new FhirError(400, [issue('too-costly', `Too many filters in ValueSet ${name}: ${filters} (at most ${limits.maxFilters})`)]);
  }
}

/** The value sets and include/exclude entries one evaluation of a value-set graph has reached so far. */
export function checkValueSetGraph(valueSets: number, includes: number, limits: TerminologyLimits, root: string): void {
  const name = root.slice(0, 200);
  if (valueSets > limits.maxValueSets) throw new FhirError(400, [issue('too-costly', `Too many value sets in the evaluation of ValueSet ${name}: more than ${limits.maxValueSets}`)]);
  if (includes > limits.maxIncludes) throw new FhirError(400, [issue('too-costly', `Too many includes in the evaluation of ValueSet ${name}: more than ${limits.maxIncludes}`)]);
}

/** Codings of one `codeableConcept` input. */
export function checkCodeableConcept(cc: CodeableConcept | undefined, limits: TerminologyLimits): void {
  const codings = Array.isArray(cc?.coding) ? cc.coding.length : 0;
  if (codings > limits.maxCodings) {
    throw new FhirError(400, [issue('too-costly', `Too many codings in codeableConcept: ${codings} (at most ${limits.maxCodings})`, 'codeableConcept')]);
  }
}

/**
 * Concepts of a request-supplied CodeSystem (`tx-resource`), nested ones included, counted
 * before anything is built: indexing one costs the event loop time in proportion to its size.
 */
export function checkInlineConcepts(cs: CodeSystem, limits: TerminologyLimits): void {
  let count = 0;
  const stack: unknown[] = [cs.concept];
  while (stack.length > 0 && count <= limits.maxInlineConcepts) {
    const list = stack.pop();
    if (!Array.isArray(list)) continue;
    count += list.length;
    for (const c of list as CodeSystemConcept[]) if (Array.isArray(c?.concept)) stack.push(c.concept);
  }
  if (count > limits.maxInlineConcepts) {
    const name = String(cs.url).slice(0, 200);
    throw new FhirError(400, [
      issue('too-costly', `Too many concepts in the request-supplied CodeSystem ${name}: more than ${limits.maxInlineConcepts} (store it with PUT CodeSystem instead)`, 'tx-resource'),
    ]);
  }
}
