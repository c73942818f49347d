import { createHash } from 'node:crypto';
import type { Resource } from '@medplum/fhirtypes';

/**
 * The id a package's resource is stored under (docs/profiles.md#packages): its own, unless a
 * stored resource of the type has that id for another url or version (another package, or
 * another version of the same package, used the same id) — then the id with a suffix derived
 * from `url|version`, so both versions stay held and loading a package again finds its own.
 */
export async function placeId(resource: Resource, read: (type: string, id: string) => Promise<Resource | undefined>): Promise<string | undefined> {
  const { id } = resource;
  if (!id) return undefined;
  const canonical = canonicalOf(resource);
  if (!canonical) return id;
  const stored = await read(resource.resourceType, id);
  if (!stored || canonicalOf(stored) === canonical) return id;
  return `${id.slice(0, 50)}-${createHash('sha256').update(canonical).digest('hex').slice(0, 12)}`;
}

function canonicalOf(resource: Resource): string | undefined {
  const { url, version } = resource as { url?: string; version?: string };
  return url ? `${url}|${version ?? ''}` : undefined;
}
