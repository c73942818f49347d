import type { CodeSystemProperty } from '@medplum/fhirtypes';

/**
 * SNOMED CT names shared by its loader (store/rf2-import.ts), its provider and the canonical
 * rules (docs/terminology.md#snomed-ct): the system URI, edition version URIs, the metadata
 * SCTIDs a release is read with, and the properties the CodeSystem declares.
 */

export const SCT_SYSTEM = 'http://snomed.info/sct';

export const SCTID = {
  root: '138875005',
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

/** The language tag of a dialect's language refset (the tag a dialect's preferred term carries). */
export const DIALECT_TAGS: Record<string, string> = { [SCTID.usEnglish]: 'en-US', [SCTID.gbEnglish]: 'en-GB' };

/**
 * The names of the published editions, by the module that identifies them
 * (docs/terminology.md#editions-and-versions); an edition of another module is named after the
 * published edition it depends on (ModuleDependency refset).
 */
export const EDITION_NAMES: Record<string, string> = {
  '900000000000207008': 'International Edition',
  '449081005': 'International Spanish Edition',
  '11000221109': 'Argentinian Edition',
  '32506021000036107': 'Australian Edition (with drug extension)',
  '11000234105': 'Austrian Edition',
  '11000172109': 'Belgian Edition',
  '20621000087109': 'Canadian English Edition',
  '20611000087101': 'Canadian Canadian French Edition',
  '11000279109': 'Czech Edition',
  '554471000005108': 'Danish Edition',
  '11000181102': 'Estonian Edition',
  '11000229106': 'Finnish Edition',
  '11000274103': 'German Edition',
  '1121000189102': 'Indian Edition',
  '827022005': 'IPS Terminology',
  '11000220105': 'Irish Edition',
  '11000146104': 'Netherlands Edition',
  '21000210109': 'New Zealand Edition',
  '51000202101': 'Norwegian Edition',
  '11000267109': 'Republic of Korea Edition (South Korea)',
  '900000001000122104': 'Spanish National Edition',
  '45991000052106': 'Swedish Edition',
  '2011000195101': 'Swiss Edition',
  '83821000000107': 'UK Edition',
  '999000021000000109': 'UK Clinical Edition',
  '5631000179106': 'Uruguay Edition',
  '21000325107': 'Chilean Edition',
  '731000124108': 'US Edition',
  '5991000124107': 'US Edition (with ICD-10-CM maps)',
};

/** The CodeSystem title of an edition: `SNOMED CT <edition name>` (plain `SNOMED CT` when unnamed). */
export function editionTitle(name: string | undefined): string {
  return name ? `SNOMED CT ${name}` : 'SNOMED CT';
}

/** The edition name back from the CodeSystem title (undefined when it has none). */
export function editionNameOf(title: string | undefined): string | undefined {
  return title?.startsWith('SNOMED CT ') ? title.slice('SNOMED CT '.length) : undefined;
}

/**
 * What the loader records about a description beyond its language, type and term
 * (docs/terminology.md#loading-an-rf2-release): an extension with this url on the stored
 * designation, `valueString` = space-separated `inactive`, `p<refset>` (preferred in that
 * language refset), `a<refset>` (acceptable). The provider reads it and takes it off.
 */
export const DESCRIPTION_MARKER = 'urn:lattice:sct-description';

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
