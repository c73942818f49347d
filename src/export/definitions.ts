import type { OperationDefinition, OperationDefinitionParameter } from '@medplum/fhirtypes';

/**
 * The OperationDefinitions of `$export` at its three levels (docs/export.md): system
 * (`[base]/$export`), every Patient (`[base]/Patient/$export`) and a Group's members
 * (`[base]/Group/<id>/$export`), with the inputs of the Bulk Data Access IG 2.0. The canonical
 * URLs are the IG's, so clients find the operations they know in the CapabilityStatement.
 * Inputs the server does not act on (`includeAssociatedData`) are declared and refused when
 * given (docs/export.md#parameters).
 */
const IG = 'http://hl7.org/fhir/uv/bulkdata/OperationDefinition';

function input(name: string, type: string, max: string, documentation: string): OperationDefinitionParameter {
  return { name, use: 'in', min: 0, max, type, documentation };
}

const COMMON: OperationDefinitionParameter[] = [
  input('_outputFormat', 'string', '1', 'Format of the files: application/fhir+ndjson (the default), application/ndjson or ndjson.'),
  input('_since', 'instant', '1', 'Only resources last updated after this instant.'),
  input('_type', 'string', '*', 'Comma-separated resource types to export (default: every type the caller may search).'),
  input('_typeFilter', 'string', '*', 'A search of one exported type, `Type?param=value&…`: only its matches of that type are exported.'),
  input('_elements', 'string', '*', 'Comma-separated `element` or `Type.element`: only these top-level elements (resources tagged SUBSETTED).'),
  input('includeAssociatedData', 'code', '*', 'Not supported: refused unless the client asked for lenient handling.'),
];

const PATIENT = input('patient', 'Reference', '*', 'POST only: the Patients whose compartments are exported (within the group, for a Group export).');

function definition(id: string, name: string, title: string, where: Partial<OperationDefinition>, parameters: OperationDefinitionParameter[]): OperationDefinition {
  return {
    resourceType: 'OperationDefinition',
    id,
    url: `${IG}/${id}`,
    version: '2.0.0',
    name,
    title,
    status: 'active',
    kind: 'operation',
    code: 'export',
    description: `${title}: started with Prefer: respond-async, answered 202 with the status URL in Content-Location (docs/export.md).`,
    system: false,
    type: false,
    instance: false,
    ...where,
    parameter: parameters,
  };
}

export const SYSTEM_EXPORT = definition('export', 'BulkDataExport', 'Export of every resource of the project', { system: true }, COMMON);
export const PATIENT_EXPORT = definition('patient-export', 'PatientLevelExport', 'Export of the Patient compartments', { type: true, resource: ['Patient'] }, [...COMMON, PATIENT]);
export const GROUP_EXPORT = definition('group-export', 'GroupLevelExport', 'Export of the Patient compartments of a group', { instance: true, resource: ['Group'] }, [...COMMON, PATIENT]);

/** The names these definitions declare; anything else in a kick-off is an unknown parameter. */
export const DECLARED_INPUTS: ReadonlySet<string> = new Set([...COMMON, PATIENT].map((p) => p.name));
