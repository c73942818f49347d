import { badRequest, notFound } from '../../fhir/outcome.js';
import { providerFor } from '../providers/select.js';
import { msg } from '../messages.js';
import type { CodeSystemInfo, TermContext } from '../types.js';

export type SubsumptionOutcome = 'equivalent' | 'subsumes' | 'subsumed-by' | 'not-subsumed';

/**
 * `$subsumes` (docs/terminology.md#subsumes): the relation between two codes of one code system, answered
 * from the closure in the in-memory index (two binary searches at most, whatever the depth or
 * number of paths; before the index is built, two walks up the direct edges in SQL). Codes that are the same concept (up to case in a case-insensitive system) are
 * `equivalent`, even in a code system without an is-a hierarchy.
 */
export async function subsumes(tc: TermContext, cs: CodeSystemInfo, codeA: string, codeB: string): Promise<SubsumptionOutcome> {
  const provider = providerFor(tc, cs);
  const found = await provider.findConcepts([codeA, codeB]);
  const a = found.get(codeA);
  if (!a) throw notFound(msg.codeNotInSystem(codeA, cs.url));
  const b = found.get(codeB);
  if (!b) throw notFound(msg.codeNotInSystem(codeB, cs.url));
  if (a.id === b.id) return 'equivalent';
  if (cs.hierarchyMeaning !== undefined && cs.hierarchyMeaning !== 'is-a') throw badRequest(msg.notIsA(cs.url));
  if (await provider.isAncestor(a.id, b.id)) return 'subsumes';
  if (await provider.isAncestor(b.id, a.id)) return 'subsumed-by';
  return 'not-subsumed';
}
