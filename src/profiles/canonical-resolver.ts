import type { StructureDefinition } from '@medplum/fhirtypes';
import type { ResourceRepository } from '../core/repository.js';

/**
 * Finds the StructureDefinition a canonical names among those the caller reads (its project's
 * and the shared content, e.g. an imported implementation guide's), version-aware
 * (docs/profiles.md#canonicals): `url|version` picks that version; a bare `url` the latest
 * version held (versions compared part by part, numerically where both parts are numbers;
 * equal versions → the one updated last).
 */
export async function resolveStructureDefinition(repo: ResourceRepository, canonical: string): Promise<StructureDefinition | undefined> {
  const bar = canonical.indexOf('|');
  const url = bar < 0 ? canonical : canonical.slice(0, bar);
  const version = bar < 0 ? undefined : canonical.slice(bar + 1) || undefined;
  const params: Array<[string, string]> = [['url', url], ['_count', String(MAX_VERSIONS)]];
  if (version !== undefined) params.push(['version', version]);
  const found = (await repo.search({ resourceType: 'StructureDefinition', params })).resources as StructureDefinition[];
  // `url` is a uri parameter (exact) and `version` a token: check both again all the same.
  const matching = found.filter((sd) => sd.url === url && (version === undefined || sd.version === version));
  return matching.sort(latestFirst)[0];
}

/** Versions of one StructureDefinition url considered (more are not expected of one url). */
const MAX_VERSIONS = 100;

function latestFirst(a: StructureDefinition, b: StructureDefinition): number {
  return compareVersions(b.version, a.version) || (b.meta?.lastUpdated ?? '').localeCompare(a.meta?.lastUpdated ?? '');
}

/** Compares `1.10.0` and `1.9.2` as versions (numeric parts as numbers); a missing version sorts first. */
export function compareVersions(a: string | undefined, b: string | undefined): number {
  if (a === b) return 0;
  if (a === undefined) return -1;
  if (b === undefined) return 1;
  const pa = a.split(/[.-]/);
  const pb = b.split(/[.-]/);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const x = pa[i];
    const y = pb[i];
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    const d = /^\d+$/.test(x) && /^\d+$/.test(y) ? Number(x) - Number(y) : x.localeCompare(y);
    if (d !== 0) return d;
  }
  return 0;
}
