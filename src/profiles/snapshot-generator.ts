import type { StructureDefinition } from '@medplum/fhirtypes';
import { definitionsNeeded } from './definitions-needed.js';
import type { SnapshotGenerator } from './profile-source.js';
import { generateSnapshot } from './snapshot/index.js';

/**
 * The snapshot generator the profile source uses for a held profile without a snapshot
 * (docs/profiles.md#snapshots): the definitions it needs are fetched ahead through the
 * source's own resolution (so they are the caller's, version-aware), then the generation runs.
 */
export function snapshotGenerator(maxElements: number): SnapshotGenerator {
  return async (profile: StructureDefinition, fetch) => generateSnapshot(profile, await definitionsNeeded(fetch, profile), { maxElements });
}
