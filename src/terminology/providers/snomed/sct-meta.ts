import type { CodeSystemProperty } from '@medplum/fhirtypes';

/**
 * SNOMED CT names shared by its loader (store/rf2-import.ts), its provider and the canonical
 * rules (docs/terminology.md#snomed-ct): the system URI, edition version URIs, the metadata
 * SCTIDs a release is read with, and the properties the CodeSystem declares.
 */

export const SCT_SYSTEM = 'http://snomed.info/sct';

export const SCTID = {
  isA: '116680003',
  fsn: '900000000000003001',
  synonym: '900000000000013009',
  definition: '900000000000550004',
  preferred: '900000000000548007',
  acceptable: '900000000000549004',
  defined: '900000000000073002',
  primitive: '900000000000074008',
  stated: '900000000000010007',
  usEnglish: '900000000000509007',
  gbEnglish: '900000000000508004',
  coreModule: '900000000000207008',
} as const;

/** Display of the description types as designation uses. */
export const SCT_USE_DISPLAY: Record<string, string> = {
  [SCTID.fsn]: 'Fully specified name',
  [SCTID.synonym]: 'Synonym',
  [SCTID.definition]: 'Definition',
};

/** Language refsets of the dialects a `displayLanguage` may name (others: by their refset SCTID). */
export const DIALECT_REFSETS: Record<string, string> = { 'en-us': SCTID.usEnglish, 'en-gb': SCTID.gbEnglish };

/** The version URI of an edition: `http://snomed.info/sct/<module>/version/<yyyymmdd>` (`xsct` when unpublished). */
export function sctVersionUri(module: string, date: string, unpublished: boolean): string {
  return `http://snomed.info/${unpublished ? 'xsct' : 'sct'}/${module}/version/${date}`;
}

/** An edition or version URI split into module and date (undefined date: the edition's newest version). */
export function parseSctVersion(version: string): { module: string; date: string | undefined; unpublished: boolean } | undefined {
  const m = /^http:\/\/snomed\.info\/(x?sct)\/(\d{6,18})(?:\/version\/(\d{8}))?\/?$/.exec(version);
  return m ? { module: m[2], date: m[3], unpublished: m[1] === 'xsct' } : undefined;
}

const CP = 'http://hl7.org/fhir/concept-properties';

/** The properties of the SNOMED CT CodeSystem (attributes are properties too, by their SCTID). */
export const SCT_PROPERTIES: CodeSystemProperty[] = [
  { code: 'inactive', uri: `${CP}#inactive`, type: 'boolean', description: 'Whether the concept is inactive' },
  { code: 'parent', uri: `${CP}#parent`, type: 'code', description: 'A direct supertype (inferred |is a|)' },
  { code: 'child', uri: `${CP}#child`, type: 'code', description: 'A direct subtype (inferred |is a|)' },
  { code: 'effectiveTime', type: 'dateTime', description: 'The effective time of the concept' },
  { code: 'moduleId', uri: `${SCT_SYSTEM}/property/moduleId`, type: 'code', description: 'The module of the concept' },
  { code: 'sufficientlyDefined', uri: `${SCT_SYSTEM}/property/sufficientlyDefined`, type: 'boolean', description: 'Whether the concept is fully defined' },
  { code: 'normalForm', type: 'string', description: 'The necessary normal form expression of the concept' },
  { code: 'normalFormTerse', type: 'string', description: 'The necessary normal form expression of the concept, without terms' },
];
