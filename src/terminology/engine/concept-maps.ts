import type { ConceptMap } from '@medplum/fhirtypes';
import type { ResourceRepository } from '../../core/repository.js';
import { newestFirst, splitCanonical, versionMatches } from '../versions.js';

/**
 * Which ConceptMaps exist for a caller (docs/terminology.md#translate): the ones sent with the
 * request (`tx-resource`, `conceptMap`), then the stored ones the caller's repository sees —
 * its project and shared content (the tenancy rule is the repository's, storage/scope.ts).
 */

/** Stored maps read per search at most (the search's own page limit). */
const SEARCH_LIMIT = '1000';

/** A map with what choosing among versions needs. */
interface Candidate {
  map: ConceptMap;
  version: string | undefined;
  lastUpdated: string;
  tier: number;
}

/** The map named by a canonical (`url|version`, or a separate version); undefined when none is visible. */
export async function resolveConceptMap(
  repo: ResourceRepository,
  inline: ConceptMap[],
  canonical: string,
  version?: string,
): Promise<ConceptMap | undefined> {
  const { url, version: fromUrl } = splitCanonical(canonical);
  const wanted = version ?? fromUrl;
  const candidates = [
    ...inline.filter((m) => m.url === url).map((m) => candidate(repo, m, true)),
    ...(await stored(repo, [['url', url]])).filter((m) => m.url === url).map((m) => candidate(repo, m, false)),
  ].filter((c) => wanted === undefined || versionMatches(c.version, wanted));
  if (candidates.length === 0) return undefined;
  const best = Math.min(...candidates.map((c) => c.tier));
  return newestFirst(candidates.filter((c) => c.tier === best))[0].map;
}

/**
 * Every visible map with a group from `source` (or, for a reverse translation, to `target`):
 * the request's own maps first, then the stored ones but those whose url and version a map of
 * the request has (it replaces them for this request). Maps are not otherwise deduplicated by
 * canonical: two maps may share one and still map different systems.
 */
export async function conceptMapsFor(
  repo: ResourceRepository,
  inline: ConceptMap[],
  side: 'source' | 'target',
  system: string,
): Promise<ConceptMap[]> {
  const replaced = new Set(inline.map(canonicalOf));
  const found = (await stored(repo, [[`${side}-system`, system]])).filter((m) => !replaced.has(canonicalOf(m)));
  return [...inline, ...found].filter((m) => (m.group ?? []).some((g) => g[side] === system));
}

async function stored(repo: ResourceRepository, params: Array<[string, string]>): Promise<ConceptMap[]> {
  const result = await repo.search({ resourceType: 'ConceptMap', params: [...params, ['_count', SEARCH_LIMIT]] });
  return result.resources as ConceptMap[];
}

const canonicalOf = (m: ConceptMap) => `${m.url ?? ''}|${m.version ?? ''}`;

/** Request-supplied before the caller's project before shared content before other projects. */
function candidate(repo: ResourceRepository, map: ConceptMap, inline: boolean): Candidate {
  const project = map.meta?.project;
  const tier = inline ? 0 : project !== undefined && project === repo.auth.projectId ? 1 : project === undefined ? 2 : 3;
  return { map, version: map.version, lastUpdated: map.meta?.lastUpdated ?? '', tier };
}
