import { FhirError, issue } from '../../../fhir/outcome.js';
import { CONTROL_PARAMETERS } from './controls.js';
import { splitModifier } from './filters.js';
import { splitValues } from './values.js';
import { comparisons, parseFilter } from './filter-expression.js';

/**
 * Bounds on the work one search may ask for (docs/rest.md#limits), checked before any SQL is
 * built: a search's cost grows with its parameters, their values and its chains, and one
 * request must not hold the database for everyone else.
 */
export interface SearchLimits {
  /** Filter parameters (result parameters such as `_count` not counted). */
  maxParameters: number;
  /** Comma-separated values of one parameter. */
  maxValues: number;
  /** Links of one chained parameter (`subject:Patient.organization.name` has 2). */
  maxChain: number;
  /** `_include`/`_revinclude` parameters of one search. */
  maxIncludes: number;
  /** Resources `_include`/`_revinclude` may add to one page (all directives and iterations). */
  maxIncluded: number;
  /** Distinct stored codes a terminology modifier (`:below`, `:above`, `:in`, `:not-in`) may test. */
  maxCodes: number;
  /** Nesting of `_has` (`_has:A:p:_has:B:q:…` has 2). */
  maxHasDepth: number;
  /** Comparisons of one `_filter` expression. */
  maxFilterTerms: number;
  /**
   * Matches a search without `_total` counts for its total (docs/rest.md#search): up to this
   * many the total is exact; beyond, the searchset has none (`_total=accurate` counts them all).
   */
  maxCounted: number;
}

export const DEFAULT_SEARCH_LIMITS: SearchLimits = {
  maxParameters: 30,
  maxValues: 100,
  maxChain: 3,
  maxIncludes: 10,
  maxIncluded: 1000,
  maxCodes: 10_000,
  maxHasDepth: 2,
  maxFilterTerms: 20,
  maxCounted: 1000,
};

/** Throws 400 `too-costly` naming the bound a search exceeds. */
export function checkSearchLimits(params: Array<[string, string]>, limits: SearchLimits): void {
  const filters = params.filter(([name]) => !CONTROL_PARAMETERS.has(splitModifier(name)[0]));
  const includes = params.filter(([name]) => /^_(rev)?include(:|$)/.test(name)).length;
  if (includes > limits.maxIncludes) {
    throw tooCostly(`Too many _include/_revinclude parameters: ${includes} (at most ${limits.maxIncludes})`);
  }
  if (filters.length > limits.maxParameters) {
    throw tooCostly(`Too many search parameters: ${filters.length} (at most ${limits.maxParameters})`);
  }
  for (const [name, value] of filters) {
    if (name === '_filter' && value.trim() !== '') {
      const terms = comparisons(parseFilter(value));
      if (terms > limits.maxFilterTerms) throw tooCostly(`_filter has ${terms} comparisons (at most ${limits.maxFilterTerms})`);
    }
    const has = name.split('_has:').length - 1;
    if (has > limits.maxHasDepth) throw tooCostly(`_has nested too deep: ${has} levels (at most ${limits.maxHasDepth})`);
    const links = name.split('.').length - 1;
    if (links > limits.maxChain) throw tooCostly(`Chained search parameter too deep: ${links} links (at most ${limits.maxChain})`);
    const values = splitValues(value).length;
    if (values > limits.maxValues) {
      throw tooCostly(`Too many values for search parameter ${name.slice(0, 64)}: ${values} (at most ${limits.maxValues})`);
    }
  }
}

/** Throws 400 `too-costly`: `_include`/`_revinclude` would add more than `maxIncluded` resources. */
export function tooManyIncluded(maxIncluded: number): FhirError {
  return tooCostly(`_include/_revinclude would add more than ${maxIncluded} resources (at most ${maxIncluded}): narrow the search or lower _count`);
}

export function tooCostly(text: string): FhirError {
  return new FhirError(400, [issue('too-costly', text)]);
}
