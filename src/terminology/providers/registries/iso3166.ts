import codes from 'i18n-iso-countries/codes.json' with { type: 'json' };
import english from 'i18n-iso-countries/langs/en.json' with { type: 'json' };
import type { Registry, RegistryConcept } from './registry.js';

/**
 * ISO 3166-1 countries (`urn:iso:std:iso:3166`, docs/terminology.md#code-systems-built-in): the
 * alpha-2, alpha-3 and numeric codes of the `i18n-iso-countries` package, display the English
 * short name (its first); enumerable: the alpha-2 codes, then the alpha-3, then the numeric,
 * each in code order. Codes are upper case (`us` is not a code).
 */

const names = english.countries as Record<string, string | string[]>;
const concepts = new Map<string, RegistryConcept>();
for (const [alpha2, alpha3, numeric] of codes) {
  const name = names[alpha2];
  const display = Array.isArray(name) ? name[0] : name;
  for (const code of [alpha2, alpha3, numeric]) concepts.set(code, { code, display });
}
const listed = [
  ...[...concepts.keys()].filter((c) => /^[A-Z]{2}$/.test(c)).sort(),
  ...[...concepts.keys()].filter((c) => /^[A-Z]{3}$/.test(c)).sort(),
  ...[...concepts.keys()].filter((c) => /^\d{3}$/.test(c)).sort(),
];

export const iso3166Registry: Registry = {
  find: (code) => concepts.get(code),
  list: () => listed,
};
