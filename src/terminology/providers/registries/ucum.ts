import { checkUcum } from '../../../fhir/ucum.js';
import { invalidValueSet } from '../filters.js';
import { english, type FilterTest, type Registry } from './registry.js';

/**
 * UCUM (`http://unitsofmeasure.org`, docs/terminology.md#ucum): a grammar, checked by
 * src/fhir/ucum.ts. A valid expression is its own display; its designations are the expression
 * spelled out unit by unit and, when the library lists the whole expression, the library's
 * name (as a synonym). Filter: `canonical = <unit>` selects the codes with the same canonical
 * unit as `<unit>`.
 */

const SYNONYM = { system: 'http://snomed.info/sct', code: '900000000000013009' };

export const ucumRegistry: Registry = {
  find(code) {
    const checked = checkUcum(code);
    if (!checked.valid) return undefined;
    return {
      code,
      display: code,
      designations: [english(checked.formal), ...(checked.name ? [english(checked.name, SYNONYM)] : [])],
    };
  },

  reason(code) {
    const checked = checkUcum(code);
    return checked.valid ? undefined : `Error processing unit '${code}': ${checked.reason}`;
  },

  filter(property, op, value, path) {
    if (property !== 'canonical' || op !== '=') return undefined;
    const target = checkUcum(value);
    if (!target.valid || target.canonical === undefined) {
      throw invalidValueSet(`The value '${value}' of the canonical filter is not a UCUM unit with a canonical form`, path);
    }
    const wanted = target.canonical;
    const test: FilterTest = (c) => {
      const checked = checkUcum(c.code);
      return checked.valid && checked.canonical === wanted;
    };
    test.why = (c) => {
      const checked = checkUcum(c.code);
      const canonical = checked.valid ? checked.canonical : undefined;
      return canonical === undefined ? `Code ${c.code} has no canonical form, not ${value} as required` : `Code ${c.code} has canonical form ${canonical}, not ${value} as required`;
    };
    return test;
  },
};
