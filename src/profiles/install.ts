import type { FeatureEnv } from '../core/feature.js';
import type { OperationRegistry } from '../core/operation.js';
import { snapshotOperation } from './snapshot-operation.js';

/** Wires the profiles feature (src/profiles/README.md): `StructureDefinition/$snapshot`. */
export function installProfiles(env: FeatureEnv, registry: OperationRegistry): void {
  registry.register(snapshotOperation(env.config.profileMaxElements));
}
