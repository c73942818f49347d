import type { CodeSystemProperty } from '@medplum/fhirtypes';

/**
 * What LOINC is in Lattice (docs/terminology.md#loinc): its canonical, the kinds of codes a
 * release holds, and the properties a loaded release declares. Shared by the loader
 * (store/loinc-import.ts) and the provider (loinc-provider.ts).
 */
export const LOINC_URL = 'http://loinc.org';
/** Implicit value sets: `http://loinc.org/vs` (all of LOINC) and `http://loinc.org/vs/<LL or LP code>`. */
export const LOINC_VS = 'http://loinc.org/vs';

const CONCEPT_PROPERTIES = 'http://hl7.org/fhir/concept-properties';
/** The URI prefix of LOINC's own properties (a part property is declared `code` with it). */
export const LOINC_PROPERTY = 'http://loinc.org/property/';

/** LOINC term codes (`2339-0`), parts (`LP…`), answer lists (`LL…`), answers (`LA…`). */
export const TERM_CODE = /^[0-9]+-[0-9]$/;
export const PART_CODE = /^LP[0-9]+-[0-9]$/;
export const LIST_CODE = /^LL[0-9]+-[0-9]$/;
export const ANSWER_CODE = /^LA[0-9]+-[0-9]$/;

/** The six axes of a term, named by the release's part links (`Property` column) and Loinc.csv columns. */
export const AXES = ['COMPONENT', 'PROPERTY', 'TIME_ASPCT', 'SYSTEM', 'SCALE_TYP', 'METHOD_TYP'] as const;

/** Loinc.csv columns kept as string properties of a term (empty values are left out). */
export const TERM_STRING_COLUMNS = [
  'STATUS',
  'CLASSTYPE',
  'ORDER_OBS',
  'VersionFirstReleased',
  'VersionLastChanged',
  'CHNG_TYPE',
  'STATUS_REASON',
  'STATUS_TEXT',
  'UNITSREQUIRED',
  'EXAMPLE_UNITS',
  'EXAMPLE_UCUM_UNITS',
  'RELATEDNAMES2',
  'FORMULA',
  'EXMPL_ANSWERS',
  'SURVEY_QUEST_TEXT',
  'SURVEY_QUEST_SRC',
  'PanelType',
  'AskAtOrderEntry',
  'AssociatedObservations',
  'HL7_ATTACHMENT_STRUCTURE',
  'EXTERNAL_COPYRIGHT_NOTICE',
  'EXTERNAL_COPYRIGHT_LINK',
  'COMMON_TEST_RANK',
  'COMMON_ORDER_RANK',
] as const;

/**
 * Term properties `$lookup` returns only when the request names them (`property`): the release
 * bookkeeping of a term, not what it means (docs/terminology.md#loinc).
 */
export const ON_REQUEST: ReadonlySet<string> = new Set(['VersionFirstReleased', 'VersionLastChanged', 'CHNG_TYPE', 'STATUS_REASON', 'STATUS_TEXT', 'COMMON_TEST_RANK', 'COMMON_ORDER_RANK']);

/** What a CLASSTYPE value stands for (LOINC's users' guide): the description of the property in `$lookup`. */
export const CLASSTYPE_NAMES: Readonly<Record<string, string>> = { '1': 'Laboratory class', '2': 'Clinical class', '3': 'Claims attachments', '4': 'Surveys' };

/** Statuses that make a term or part inactive (the second one still usable, with a warning). */
export const INACTIVE_STATUSES: ReadonlySet<string> = new Set(['DEPRECATED', 'DISCOURAGED']);

/** Properties that link codes of answer lists: a term's and an answer's lists, a list's answers and the terms it answers. */
export const ANSWER_LIST = 'AnswerList';
export const ANSWER = 'Answer';
export const ANSWERS_FOR = 'answers-for';

/** Designation uses (system http://loinc.org). */
export const USE = {
  longCommonName: 'LONG_COMMON_NAME',
  shortName: 'SHORTNAME',
  consumerName: 'ConsumerName',
  displayName: 'DisplayName',
  variantDisplayName: 'LinguisticVariantDisplayName',
} as const;

/** The `CodeSystem.property` of a loaded release; `partProperties` are the ones its part links name (valued with the part's code). */
export function loincProperties(partProperties: Iterable<string>): CodeSystemProperty[] {
  const props: CodeSystemProperty[] = [
    { code: 'parent', uri: `${CONCEPT_PROPERTIES}#parent`, type: 'code', description: 'A parent in the LOINC multiaxial hierarchy' },
    { code: 'child', uri: `${CONCEPT_PROPERTIES}#child`, type: 'code', description: 'A child in the LOINC multiaxial hierarchy' },
    { code: 'inactive', uri: `${CONCEPT_PROPERTIES}#inactive`, type: 'boolean', description: 'True for DEPRECATED and DISCOURAGED codes' },
  ];
  for (const code of partProperties) props.push({ code, uri: `${LOINC_PROPERTY}${code}`, type: 'code', description: `The ${code} part` });
  // STATUS is the concept's status (ACTIVE, TRIAL, DISCOURAGED, DEPRECATED).
  for (const code of TERM_STRING_COLUMNS) props.push({ code, uri: code === 'STATUS' ? `${CONCEPT_PROPERTIES}#status` : `${LOINC_PROPERTY}${code}`, type: 'string' });
  props.push(
    { code: ANSWER_LIST, type: 'code', description: 'The answer lists of a term, or the lists an answer is in' },
    { code: ANSWER, type: 'code', description: 'An answer of an answer list' },
    { code: ANSWERS_FOR, type: 'code', description: 'A term an answer list is linked to' },
  );
  return props;
}
