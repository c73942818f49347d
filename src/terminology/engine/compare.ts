import type { ValueSet } from '@medplum/fhirtypes';
import { FhirError } from '../../fhir/outcome.js';
import { msg, valueSetText } from '../messages.js';
import type { TermContext } from '../types.js';
import { compareDefinitions, setFacts, type DefinitionFacts } from './compare-definitions.js';
import { flatten } from './compose.js';
import { parseLanguages } from './display.js';
import { expandValueSet } from './expand.js';

/**
 * `ValueSet/$compare` (docs/terminology.md#compare): how the codes of `this` value set relate to
 * those of `other`. The definitions decide when they can (compare-definitions.ts); otherwise both
 * are expanded (bounded like any `$expand`) and their codes compared by system and code — the
 * version a code was drawn from does not make it another code. When neither decides, the answer
 * is `indeterminate` with the reason.
 */

export type Relation = 'same' | 'subset' | 'superset' | 'overlapping' | 'disjoint' | 'empty' | 'indeterminate';

export interface Comparison {
  result: Relation;
  message: string;
  performedExpansion: boolean;
  /** Per code (`system|code`), when the codes themselves were compared. */
  common?: string[];
  missing?: string[];
  extra?: string[];
}

/** The relation the facts decide, or undefined when one of them is unknown. */
function decide(f: DefinitionFacts): Relation | undefined {
  if (f.thisExtra === undefined || f.otherExtra === undefined) return undefined;
  if (!f.thisExtra && !f.otherExtra) return f.shared === false ? 'empty' : 'same';
  if (!f.thisExtra) return 'subset';
  if (!f.otherExtra) return 'superset';
  if (f.shared === undefined) return undefined;
  return f.shared ? 'overlapping' : 'disjoint';
}

/** The codes of a whole expansion, `system|code`. */
async function expandedCodes(tc: TermContext, vs: ValueSet): Promise<Set<string>> {
  const expanded = await expandValueSet(tc, vs, {
    offset: 0, count: undefined, filter: undefined, activeOnly: false, includeDesignations: false, includeDefinition: false,
    excludeNested: true, languages: parseLanguages(undefined), echo: [],
  });
  return new Set(flatten(expanded.expansion?.contains).filter((c) => c.code).map((c) => `${c.system ?? ''}|${c.code}`));
}

function answer(result: Relation, a: string, b: string, performedExpansion: boolean, codes?: { this: Set<string>; other: Set<string> }): Comparison {
  const out: Comparison = { result, message: msg.compared(result, a, b), performedExpansion };
  if (codes && result !== 'same' && result !== 'empty') {
    out.common = [...codes.this].filter((c) => codes.other.has(c));
    out.missing = [...codes.this].filter((c) => !codes.other.has(c));
    out.extra = [...codes.other].filter((c) => !codes.this.has(c));
  }
  return out;
}

export async function compareValueSets(tc: TermContext, thisVs: ValueSet, otherVs: ValueSet): Promise<Comparison> {
  const a = valueSetText(thisVs);
  const b = valueSetText(otherVs);
  const facts = await compareDefinitions(tc, thisVs, otherVs);
  const byDefinition = decide(facts);
  if (byDefinition) return answer(byDefinition, a, b, false, facts.codes);
  let codes: { this: Set<string>; other: Set<string> };
  try {
    codes = { this: await expandedCodes(tc, thisVs), other: await expandedCodes(tc, otherVs) };
  } catch (err) {
    if (!(err instanceof FhirError) || err.status >= 500) throw err;
    return { result: 'indeterminate', message: msg.notCompared(a, b, err.message), performedExpansion: true };
  }
  return answer(decide(setFacts(codes.this, codes.other)) as Relation, a, b, true, codes);
}
