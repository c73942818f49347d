import { FhirError, issue } from '../../../fhir/outcome.js';
import { checkUcum, ucumBeyondBounds, type UcumCheck } from '../../../fhir/ucum.js';
import { invalidValueSet } from '../filters.js';
import { english, type FilterTest, type Registry } from './registry.js';

/**
 * UCUM (`http://unitsofmeasure.org`, docs/terminology.md#ucum): a grammar, checked by
 * src/fhir/ucum.ts. A valid expression is its own display; its designations are the expression
 * spelled out unit by unit and, when the library lists the whole expression, the library's
 * name (as a synonym). Filter: `canonical = <unit>` selects the codes with the same canonical
 * unit as `<unit>`. An expression past the bounds of src/fhir/ucum.ts is 400 `too-costly`; the
 * expressions one request checks are counted by their length (`cost`, bounded per request by
 * the registry provider).
 */

const SYNONYM = { system: 'http://snomed.info/sct', code: '900000000000013009' };

/** The check of an expression; past the bounds, the request's 400. */
function checkedOrThrow(code: string): UcumCheck {
  const result = checkUcum(code);
  if (!result.valid && result.tooCostly) {
    const shown = code.length > 60 ? `${code.slice(0, 60)}…` : code;
    throw new FhirError(400, [issue('too-costly', `Error processing unit '${shown}': ${result.reason}`)]);
  }
  return result;
}

export const ucumRegistry: Registry = {
  cost(code) {
    // One past the bounds is refused before it is parsed: it costs nothing to speak of.
    return ucumBeyondBounds(code) ? 1 : code.length;
  },

  find(code) {
    const checked = checkedOrThrow(code);
    if (!checked.valid) return undefined;
    return {
      code,
      display: code,
      designations: [english(checked.formal), ...(checked.name ? [english(checked.name, SYNONYM)] : [])],
    };
  },

  reason(code) {
    const checked = checkedOrThrow(code);
    return checked.valid ? undefined : `Error processing unit '${code}': ${checked.reason}`;
  },

  filter(property, op, value, path) {
    if (property !== 'canonical' || op !== '=') return undefined;
    const target = checkedOrThrow(value);
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
