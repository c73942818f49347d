import { badRequest } from '../../../fhir/outcome.js';

/**
 * Parsing of search values: comma lists, FHIR escapes (`\,` `\|` `\$` `\\`) and prefixes.
 */

export { splitValues } from '../../../fhir/search-values.js';

/** Removes FHIR search escapes: `\,` → `,` and so on. */
export function unescapeValue(value: string): string {
  return value.replace(/\\([\\,|$])/g, '$1');
}

/** Splits `system|code` at the first unescaped `|`; no bar → system undefined. */
export function splitPipe(value: string): [string | undefined, string] {
  for (let i = 0; i < value.length; i++) {
    if (value[i] === '\\') i++;
    else if (value[i] === '|') return [unescapeValue(value.slice(0, i)), value.slice(i + 1)];
  }
  return [undefined, unescapeValue(value)];
}

/** Comparison prefixes of date, number and quantity values. */
export type Prefix = 'eq' | 'ne' | 'gt' | 'lt' | 'ge' | 'le' | 'sa' | 'eb' | 'ap';

/** Takes an optional prefix off a value: `ge2020` → ['ge', '2020']. */
export function splitPrefix(value: string): [Prefix, string] {
  const m = /^(eq|ne|gt|lt|ge|le|sa|eb|ap)(?=[0-9+\-.])/.exec(value);
  return m ? [m[1] as Prefix, value.slice(2)] : ['eq', value];
}

/** A decimal search value with the half-width of its implicit precision range. */
export interface SearchNumber {
  value: number;
  /** `100` → 0.5, `100.00` → 0.005, `1e2` → 0.5e2: eq matches value ± halfWidth. */
  halfWidth: number;
}

const NUMBER = /^[+-]?(?:\d+(\.\d*)?|\.\d+)(?:[eE]([+-]?\d+))?$/;

/** Parses a number search value; 400 names the parameter and the value. */
export function parseSearchNumber(text: string, param: string): SearchNumber {
  const m = NUMBER.exec(text);
  const value = Number(text);
  if (!m || !Number.isFinite(value)) throw badRequest(`Invalid number '${text}' for search parameter ${param}`);
  const decimals = m[1] ? m[1].length - 1 : 0;
  const exponent = m[2] ? Number(m[2]) : 0;
  return { value, halfWidth: 0.5 * 10 ** (exponent - decimals) };
}
