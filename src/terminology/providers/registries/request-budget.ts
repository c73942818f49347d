import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { FhirError, issue } from '../../../fhir/outcome.js';
import { terminologyLimits } from '../../limits.js';
import type { TermContext } from '../../types.js';

/**
 * The work one request asks a grammar for (docs/terminology.md#limits): each distinct code a
 * grammar checks costs what the registry says (UCUM: its length), counted once per request;
 * past `LATTICE_TX_MAX_UCUM_CHARACTERS` the request is 400 `too-costly`. The checks run on the
 * event loop, so a caller gives the loop back every SLICE_MS of them (`pace`).
 */

const SLICE_MS = 10;

interface Spent {
  readonly seen: Set<string>;
  total: number;
  /** When the loop was last given back (performance.now()). */
  yielded: number;
}

const spent = new WeakMap<TermContext, Spent>();

function of(tc: TermContext): Spent {
  let s = spent.get(tc);
  if (!s) spent.set(tc, (s = { seen: new Set(), total: 0, yielded: performance.now() }));
  return s;
}

/** Counts a code of `system` about to be checked (the first time in this request). */
export function charge(tc: TermContext, system: string, code: string, cost: number): void {
  const s = of(tc);
  const key = `${system}|${code}`;
  if (s.seen.has(key)) return;
  s.seen.add(key);
  s.total += cost;
  const limit = terminologyLimits(tc.env).maxUcumCharacters;
  if (s.total > limit) {
    throw new FhirError(400, [issue('too-costly', `Too many unit expressions to check in one request: more than ${limit} characters of ${system} codes (LATTICE_TX_MAX_UCUM_CHARACTERS)`)]);
  }
}

/** Gives the event loop back when the request's checks have held it for a slice. */
export async function pace(tc: TermContext): Promise<void> {
  const s = spent.get(tc);
  if (!s || performance.now() - s.yielded < SLICE_MS) return;
  await yieldToLoop();
  s.yielded = performance.now();
}
