import type { StructureDefinition } from '@medplum/fhirtypes';
import { FhirError, issue } from '../fhir/outcome.js';
import { coreDefinition } from './snapshot/index.js';

/** Definitions one snapshot may fetch from the repository (its bases, type profiles, extension definitions). */
export const MAX_FETCHED_DEFINITIONS = 200;

/**
 * Loads, with `resolve` (what the caller reads), every StructureDefinition the snapshot of `profile` may
 * ask for — its base definitions, and the profiles its elements' types name (extension
 * definitions, constrained types; of a base with a snapshot, those of the elements the
 * differential dives below) — following those without a snapshot in turn; the R4 core
 * definitions are not fetched (generateSnapshot knows them). Returns the synchronous `fetch`
 * that generateSnapshot takes. At most MAX_FETCHED_DEFINITIONS are fetched (400 `too-costly`).
 */
export async function definitionsNeeded(
  resolve: (canonical: string) => Promise<StructureDefinition | undefined>,
  profile: StructureDefinition,
): Promise<(canonical: string) => StructureDefinition | undefined> {
  const held = new Map<string, StructureDefinition>();
  const asked = new Set<string>();
  const queue = canonicalsOf(profile);
  // Elements the differential dives below: a base's snapshot element there may name a type profile to expand.
  const diffIds = (profile.differential?.element ?? []).map((e) => e.id ?? e.path ?? '');
  while (queue.length > 0) {
    const canonical = queue.shift() as string;
    if (asked.has(canonical) || coreDefinition(canonical)) continue;
    asked.add(canonical);
    if (asked.size > MAX_FETCHED_DEFINITIONS) {
      throw new FhirError(400, [issue('too-costly', `Profile ${profile.url ?? ''}: its snapshot needs more than ${MAX_FETCHED_DEFINITIONS} other StructureDefinitions`)]);
    }
    const found = await resolve(canonical);
    if (!found) continue; // generateSnapshot names what is missing, when it needs it
    held.set(canonical, found);
    if (!found.snapshot?.element?.length) queue.push(...canonicalsOf(found));
    else queue.push(...profilesBelow(found, diffIds));
  }
  return (canonical) => held.get(canonical);
}

/** The canonicals a definition's snapshot generation may look up. */
function canonicalsOf(sd: StructureDefinition): string[] {
  const out = sd.baseDefinition ? [sd.baseDefinition] : [];
  for (const e of sd.differential?.element ?? []) for (const t of e.type ?? []) out.push(...(t.profile ?? []));
  return out;
}

/** Type profiles of a snapshot's elements that one of `diffIds` lies below. */
function profilesBelow(sd: StructureDefinition, diffIds: string[]): string[] {
  return (sd.snapshot?.element ?? [])
    .filter((e) => e.id && diffIds.some((id) => id.startsWith(`${e.id}.`)))
    .flatMap((e) => (e.type ?? []).flatMap((t) => t.profile ?? []));
}
