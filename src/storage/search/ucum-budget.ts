import { FhirError, issue } from '../../fhir/outcome.js';
import { ucumBeyondBounds, ucumConversionKnown } from '../../fhir/ucum.js';

/**
 * Characters of UCUM unit codes the search index may convert for one request's writes, counting
 * only codes it has not converted before (docs/rest.md#quantity-search). A conversion costs about
 * 0.1–0.2 ms per character of the code (a 300-character code, 50 ms), on the request's thread: a
 * request of many distinct long codes would hold the server for minutes.
 */
export const MAX_NEW_UCUM_CHARACTERS = 4000;

/** What one request has left to spend; shared by the request's repository and its transactions. */
export class UcumBudget {
  left = MAX_NEW_UCUM_CHARACTERS;
}

let current: UcumBudget | undefined;

/**
 * Runs `fn` (synchronous: index extraction) charging new unit codes to `budget`. Being
 * synchronous, nothing else runs in between, so a module-level slot is enough.
 */
export function withUcumBudget<T>(budget: UcumBudget | undefined, fn: () => T): T {
  const before = current;
  current = budget;
  try {
    return fn();
  } finally {
    current = before;
  }
}

/** Charges a unit code about to be converted; 400 `too-costly` when the request has spent its budget. */
export function chargeUcum(code: string): void {
  // A code past the expression bounds is refused without parsing: it costs nothing.
  if (!current || ucumConversionKnown(code) || ucumBeyondBounds(code)) return;
  current.left -= code.length;
  if (current.left < 0) {
    throw new FhirError(400, [
      issue(
        'too-costly',
        `The search index converts at most ${MAX_NEW_UCUM_CHARACTERS} characters of UCUM unit codes it has not seen before per request; this request's quantities have more (send them in smaller requests)`,
      ),
    ]);
  }
}
