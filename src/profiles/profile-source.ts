import type { StructureDefinition } from '@medplum/fhirtypes';
import type { ResourceRepository } from '../core/repository.js';
import { readDefinitionBundle } from '../fhir/definitions.js';
import { FhirError } from '../fhir/outcome.js';
import { compareVersions } from './canonical-resolver.js';
import { compileProfile, type CompiledProfile } from './element-tree.js';

/** Makes a snapshot from a differential (src/profiles/snapshot-generator.ts); `fetch` resolves the base and type profiles. */
export type SnapshotGenerator = (profile: StructureDefinition, fetch: (canonical: string) => Promise<StructureDefinition | undefined>) => Promise<StructureDefinition>;

/** A canonical resolved: the compiled profile, or why it cannot be used. */
export type Resolved =
  | { found: 'yes'; profile: CompiledProfile }
  | { found: 'no' }
  /** Held, but without a snapshot the server can use. */
  | { found: 'no-snapshot'; sd: StructureDefinition; reason?: string }
  /** Not looked up: the source is frozen (inside a database transaction) and had not seen it. */
  | { found: 'unavailable' };

/** Most compiled profiles kept in memory (least recently used dropped first). */
export const PROFILE_CACHE_SIZE = 500;

const BASE_FILES = ['profiles-types.json', 'profiles-resources.json', 'profiles-others.json', 'extension-definitions.json'];
const BASE_PREFIX = 'http://hl7.org/fhir/StructureDefinition/';
let baseByUrl: Map<string, StructureDefinition> | undefined;

/** The R4 definitions of the specification itself (types, resources, its profiles and extensions), by canonical URL. */
function baseDefinitions(): Map<string, StructureDefinition> {
  if (!baseByUrl) {
    baseByUrl = new Map();
    for (const file of BASE_FILES) {
      for (const r of readDefinitionBundle(file)) {
        const sd = r as StructureDefinition;
        if (sd.resourceType === 'StructureDefinition' && sd.url && !baseByUrl.has(sd.url)) baseByUrl.set(sd.url, sd);
      }
    }
  }
  return baseByUrl;
}

/** True for the URL of a base R4 type or resource definition (not one of the specification's profiles). */
export function isBaseTypeUrl(url: string): boolean {
  if (!url.startsWith(BASE_PREFIX)) return false;
  const sd = baseDefinitions().get(url);
  return sd !== undefined && sd.derivation !== 'constraint';
}

/** The base definition of a type (`Patient`, `Quantity`), compiled. */
export function baseProfile(type: string): CompiledProfile | undefined {
  if (!baseCompiled.has(type)) baseCompiled.set(type, compileProfile(baseDefinitions().get(BASE_PREFIX + type) ?? ({} as StructureDefinition), BASE_PREFIX + type));
  return baseCompiled.get(type);
}

/** The base definitions, compiled once per process (immutable). */
const baseCompiled = new Map<string, CompiledProfile | undefined>();

const compiled = new Map<string, CompiledProfile | undefined>();

function cachedCompile(sd: StructureDefinition | undefined, url: string, version: string): CompiledProfile | undefined {
  if (!sd) return undefined;
  const key = `${url}|${version}|${sd.id ?? ''}|${sd.meta?.versionId ?? ''}|${sd.meta?.lastUpdated ?? ''}`;
  if (compiled.has(key)) {
    const hit = compiled.get(key);
    // Re-inserted: the map's order is the recency order.
    compiled.delete(key);
    compiled.set(key, hit);
    return hit;
  }
  const made = compileProfile(sd, url);
  compiled.set(key, made);
  if (compiled.size > PROFILE_CACHE_SIZE) compiled.delete(compiled.keys().next().value as string);
  return made;
}

/**
 * Resolves canonicals (`url` or `url|version`) to StructureDefinitions with a snapshot: the R4
 * definitions first, else the ones the caller sees (its project's and the shared ones; the
 * highest `version` when none is asked, then the latest written). Compiled trees are cached per
 * (url, version, id, versionId, lastUpdated), so a new version of a held profile is never
 * answered from an old one; the repository is asked each time (any node's write is seen).
 */
export class ProfileSource {
  private readonly memo = new Map<string, Promise<Resolved>>();
  private readonly seen: CompiledProfile[] = [];

  /** Frozen: inside a database transaction the repository must not be asked (base definitions and canonicals already seen still answer). */
  frozen = false;

  constructor(
    private readonly repo: ResourceRepository,
    private readonly generate?: SnapshotGenerator,
  ) {}

  /** One canonical; answers are memoised for the life of this source (one validation). */
  resolve(canonical: string): Promise<Resolved> {
    let answer = this.memo.get(canonical);
    if (!answer && this.frozen) {
      const [url] = splitCanonical(canonical);
      if (!baseDefinitions().has(url)) return Promise.resolve({ found: 'unavailable' });
    }
    if (!answer) {
      answer = this.lookup(canonical).then((r) => {
        if (r.found === 'yes') this.seen.push(r.profile);
        return r;
      });
      this.memo.set(canonical, answer);
    }
    return answer;
  }

  /** The value sets of the required and extensible bindings of every profile resolved so far. */
  boundValueSets(): string[] {
    const found = new Set<string>();
    for (const p of this.seen) {
      for (const e of p.sd.snapshot?.element ?? []) {
        const b = e.binding;
        if (b?.valueSet && (b.strength === 'required' || b.strength === 'extensible')) found.add(b.valueSet);
      }
    }
    return [...found];
  }

  private async lookup(canonical: string): Promise<Resolved> {
    const [url, version] = splitCanonical(canonical);
    const base = baseDefinitions().get(url);
    if (base && (version === undefined || version === base.version || version.startsWith('4.0'))) {
      const profile = cachedCompile(base, url, 'base');
      return profile ? { found: 'yes', profile } : { found: 'no' };
    }
    const held = await this.held(url, version);
    if (!held) return { found: 'no' };
    let sd = held;
    if (!sd.snapshot?.element?.length) {
      if (!this.generate) return { found: 'no-snapshot', sd };
      try {
        sd = await this.generate(sd, async (c) => {
          const r = await this.resolve(c);
          return r.found === 'yes' ? r.profile.sd : undefined;
        });
      } catch (err) {
        return { found: 'no-snapshot', sd: held, reason: err instanceof Error ? err.message : String(err) };
      }
    }
    const profile = cachedCompile(sd, url, sd.version ?? '');
    return profile ? { found: 'yes', profile } : { found: 'no-snapshot', sd: held };
  }

  private async held(url: string, version: string | undefined): Promise<StructureDefinition | undefined> {
    const params: Array<[string, string]> = [['url', url], ['_count', '50']];
    if (version !== undefined) params.push(['version', version]);
    try {
      const found = await this.repo.search({ resourceType: 'StructureDefinition', params });
      const list = found.resources as StructureDefinition[];
      return list.sort(newestFirst)[0];
    } catch (err) {
      // A caller who may not read StructureDefinitions is told the same as for one not held.
      if (err instanceof FhirError) return undefined;
      throw err;
    }
  }
}

export function splitCanonical(canonical: string): [string, string | undefined] {
  const bar = canonical.indexOf('|');
  return bar < 0 ? [canonical, undefined] : [canonical.slice(0, bar), canonical.slice(bar + 1) || undefined];
}

/** Highest version first (numeric parts compared as numbers), then the latest written. */
function newestFirst(a: StructureDefinition, b: StructureDefinition): number {
  const byVersion = compareVersions(b.version, a.version);
  if (byVersion !== 0) return byVersion;
  return (b.meta?.lastUpdated ?? '').localeCompare(a.meta?.lastUpdated ?? '');
}
