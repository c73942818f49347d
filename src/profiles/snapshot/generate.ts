import type { StructureDefinition } from '@medplum/fhirtypes';
import { coreDefinition } from './core-definitions.js';
import { definitionNotFound, profileError, tooManyElements } from './errors.js';
import type { Definitions } from './context.js';
import { ElementList } from './element-list.js';

/** Gives the StructureDefinition a canonical (`url` or `url|version`) names, or undefined. */
export type FetchDefinition = (canonical: string) => StructureDefinition | undefined;

/** Elements one generation may create, base definitions' snapshots included (LATTICE_PROFILE_MAX_ELEMENTS). */
export const DEFAULT_MAX_PROFILE_ELEMENTS = 50_000;
/** Levels of base definitions (a profile on a profile on …) one generation follows. */
export const MAX_DERIVATION_DEPTH = 16;

export interface SnapshotOptions {
  /** Bound on the elements generated (default DEFAULT_MAX_PROFILE_ELEMENTS). */
  maxElements?: number;
}

/**
 * Generates the snapshot of a profile from its differential and its base definition's snapshot
 * (profiling.html#snapshot, docs/profiles.md#snapshots). Pure: returns a copy of `profile`
 * whose `snapshot.element` is filled; `profile` is not changed. `fetch` gives the definitions
 * the profile names (its base, extension definitions, type profiles); the R4 core definitions
 * are found without it. A base without a snapshot gets one first, recursively (a cycle, or
 * more than MAX_DERIVATION_DEPTH levels, is an error).
 *
 * Throws a FhirError naming the profile and the element: 422 when a differential element is
 * not in the base or a definition is not found, 400 `too-costly` past `maxElements`.
 */
export function generateSnapshot(profile: StructureDefinition, fetch: FetchDefinition, options: SnapshotOptions = {}): StructureDefinition {
  return new Generation(fetch, options.maxElements ?? DEFAULT_MAX_PROFILE_ELEMENTS).generate(profile, []);
}

/** One call of generateSnapshot: the element budget and the snapshots made on the way. */
export class Generation implements Definitions {
  private used = 0;
  private readonly made = new Map<string, StructureDefinition>();

  constructor(
    private readonly fetch: FetchDefinition,
    private readonly maxElements: number,
  ) {}

  /** The definition a canonical names: the caller's, else R4 core. */
  lookup(canonical: string): StructureDefinition | undefined {
    return this.fetch(canonical) ?? coreDefinition(canonical);
  }

  /** Counts `n` new elements against the bound. */
  count(n: number, profileUrl: string): void {
    this.used += n;
    if (this.used > this.maxElements) throw tooManyElements(profileUrl, this.maxElements);
  }

  /** `canonical`'s definition with a snapshot (its own, else generated); `chain` is the derivation so far. */
  withSnapshot(canonical: string, chain: string[], what: string): StructureDefinition {
    const sd = this.lookup(canonical);
    if (!sd) throw definitionNotFound(chain[0] ?? canonical, `${what} ${canonical} not found`);
    if (sd.snapshot?.element?.length) return sd;
    const key = sd.url ?? canonical;
    let made = this.made.get(key);
    if (!made) {
      made = this.generate(sd, chain);
      this.made.set(key, made);
    }
    return made;
  }

  /** The snapshot of `profile` from its differential, whatever snapshot it already has. */
  generate(profile: StructureDefinition, chain: string[]): StructureDefinition {
    const label = profile.url ?? (profile.id ? `StructureDefinition/${profile.id}` : '(without url)');
    const top = chain[0] ?? label;
    if (chain.includes(label)) throw profileError(top, `its base definitions form a cycle: ${[...chain, label].join(' → ')}`);
    if (chain.length >= MAX_DERIVATION_DEPTH) throw profileError(top, `more than ${MAX_DERIVATION_DEPTH} levels of base definitions`);
    if (!profile.baseDefinition) {
      if (profile.snapshot?.element?.length) return structuredClone(profile);
      throw profileError(label, 'has neither a baseDefinition nor a snapshot', 'StructureDefinition.baseDefinition');
    }
    const base = this.withSnapshot(profile.baseDefinition, [...chain, label], 'base definition');
    if (profile.derivation !== 'specialization' && profile.type && base.type && profile.type !== base.type) {
      throw profileError(label, `its type ${profile.type} differs from its base's type ${base.type} (${profile.baseDefinition})`, 'StructureDefinition.type');
    }
    const list = new ElementList(this, label, base, [...chain, label]);
    (profile.differential?.element ?? []).forEach((element, i) => list.apply(element, i));
    return { ...structuredClone(profile), snapshot: { element: list.elements } };
  }
}
