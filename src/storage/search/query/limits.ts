import { FhirError, issue } from '../../../fhir/outcome.js';
import { CONTROL_PARAMETERS } from './controls.js';
import { splitModifier } from './filters.js';
import { splitValues } from './values.js';
import { comparisons, parseFilter } from './filter-expression.js';
import type { SearchLimits } from '../../../config.js';

/** The bounds of one search and their defaults live with the configuration that reads them. */
export type { SearchLimits } from '../../../config.js';
export { SEARCH_LIMIT_DEFAULTS as DEFAULT_SEARCH_LIMITS } from '../../../config.js';

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
      const terms = comparisons(parseFilter(value, limits.maxFilterDepth));
      if (terms.length > limits.maxFilterTerms) throw tooCostly(`_filter has ${terms.length} comparisons (at most ${limits.maxFilterTerms})`);
      const links = Math.max(...terms.map((t) => t.path.length - 1));
      if (links > limits.maxChain) throw tooCostly(`_filter chain too deep: ${links} links (at most ${limits.maxChain})`);
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
