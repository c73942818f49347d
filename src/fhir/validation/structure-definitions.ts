import type { StructureDefinition } from '@medplum/fhirtypes';
import { isResourceType, readDefinitionBundle, structureDefinitionMap } from '../definitions.js';

export { isResourceType };

let extraTypes: Map<string, StructureDefinition> | undefined;

/**
 * Complex types of Medplum's package that the admin resources use but `structureDefinitionMap()`
 * leaves out (it keeps only the admin resource types), e.g. `ClientApplication.identityProvider`
 * is an `IdentityProvider`. Without them those elements could not be checked.
 */
function medplumComplexTypes(): Map<string, StructureDefinition> {
  if (!extraTypes) {
    extraTypes = new Map();
    for (const r of readDefinitionBundle('profiles-medplum.json')) {
      const sd = r as StructureDefinition;
      if (sd.resourceType === 'StructureDefinition' && sd.kind === 'complex-type' && sd.type) extraTypes.set(sd.type, sd);
    }
  }
  return extraTypes;
}

/** The StructureDefinition of a resource or data type by name (R4, admin types and their complex types). */
export function structureDefinition(type: string): StructureDefinition | undefined {
  return structureDefinitionMap().get(type) ?? medplumComplexTypes().get(type);
}
