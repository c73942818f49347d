import currencies from 'currency-codes';
import type { Registry } from './registry.js';

/**
 * ISO 4217 currencies (`urn:iso:std:iso:4217`, docs/terminology.md#code-systems-built-in): the
 * alphabetic codes of the `currency-codes` package (ISO's list one), display the currency's
 * English name; enumerable, in code order.
 */

const codes = currencies.codes().slice().sort();

export const iso4217Registry: Registry = {
  find(code) {
    const record = currencies.code(code);
    return record && record.code === code ? { code, display: record.currency } : undefined;
  },
  list: () => codes,
};
