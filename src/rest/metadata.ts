import type { CapabilityStatement, CapabilityStatementRestResource, Resource } from '@medplum/fhirtypes';
import type { OperationDispatcher } from '../core/operation.js';
import type { RequestContext } from '../core/context.js';
import type { FhirRequest, FhirResult } from '../core/fhir-request.js';
import { resourceTypes, searchParametersFor } from '../fhir/definitions.js';
import { badRequest } from '../fhir/outcome.js';

/** The server's identity, stated in both capability statements. */
export const SOFTWARE = { name: 'Lattice', version: '0.1.0', releaseDate: '2026-11-24' };

/** A TerminologyCapabilities statement for the caller (the terminology feature builds it). */
export type TerminologyCapabilitiesSource = (ctx: RequestContext, software: typeof SOFTWARE) => Promise<Resource>;

const FEATURE = 'http://hl7.org/fhir/uv/application-feature/StructureDefinition/feature';
/** The version of the HL7 terminology test set the terminology features are measured with. */
const TX_TEST_VERSION = '1.0.0';

const INTERACTIONS = ['read', 'vread', 'update', 'patch', 'delete', 'history-instance', 'history-type', 'create', 'search-type'] as const;

/**
 * `GET [base]/metadata` (docs/rest.md#metadata): the CapabilityStatement, or with
 * `mode=terminology` the TerminologyCapabilities statement (`full`/`normative` = the default).
 */
export async function metadataInteraction(
  req: FhirRequest,
  dispatcher: OperationDispatcher,
  terminology: TerminologyCapabilitiesSource,
): Promise<FhirResult> {
  const modes = req.query.filter(([k]) => k === 'mode').map(([, v]) => v);
  const mode = modes[modes.length - 1];
  if (mode === 'terminology') return { status: 200, body: await terminology(req.ctx, SOFTWARE) };
  if (mode !== undefined && mode !== 'full' && mode !== 'normative') {
    throw badRequest(`Invalid value '${mode}' provided for parameter 'mode' (full, normative or terminology)`);
  }
  return { status: 200, body: capabilityStatement(req.ctx, dispatcher) };
}

/**
 * The CapabilityStatement, built from what is really registered: resource types and their
 * search parameters from the definitions, operations from the operations registry.
 */
export function capabilityStatement(ctx: RequestContext, dispatcher: OperationDispatcher): CapabilityStatement {
  const operations = dispatcher.capabilities();
  const resources: CapabilityStatementRestResource[] = [...resourceTypes()].sort().map((type) => ({
    type: type as CapabilityStatementRestResource['type'],
    interaction: INTERACTIONS.map((code) => ({ code })),
    versioning: 'versioned',
    readHistory: true,
    updateCreate: true,
    conditionalCreate: true,
    conditionalUpdate: true,
    conditionalDelete: 'single',
    searchParam: [
      ...['_id', '_lastUpdated'].map((name) => ({ name, type: name === '_id' ? ('token' as const) : ('date' as const) })),
      ...[...searchParametersFor(type).values()]
        .filter((sp) => sp.code !== '_id' && sp.code !== '_lastUpdated')
        .map((sp) => ({ name: sp.code, definition: sp.url, type: sp.type })),
    ],
    operation: operations
      .filter((op) => op.resourceTypes.includes(type))
      .map((op) => ({ name: op.name, definition: op.definition })),
  }));
  return {
    resourceType: 'CapabilityStatement',
    // Features of the terminology ecosystem (tx.fhir.org): the test set measured with, and
    // CodeSystems accepted as request parameters (`tx-resource`).
    extension: [
      { url: FEATURE, extension: [{ url: 'definition', valueCanonical: 'http://hl7.org/fhir/uv/tx-tests/FeatureDefinition/test-version' }, { url: 'value', valueCode: TX_TEST_VERSION }] },
      { url: FEATURE, extension: [{ url: 'definition', valueCanonical: 'http://hl7.org/fhir/uv/tx-ecosystem/FeatureDefinition/CodeSystemAsParameter' }, { url: 'value', valueBoolean: true }] },
    ],
    url: `${ctx.fhirBaseUrl}/metadata`,
    version: SOFTWARE.version,
    name: SOFTWARE.name,
    title: `${SOFTWARE.name} FHIR R4 server`,
    status: 'active',
    date: new Date().toISOString(),
    kind: 'instance',
    instantiates: ['http://hl7.org/fhir/CapabilityStatement/terminology-server'],
    software: SOFTWARE,
    implementation: { description: 'Lattice FHIR R4 server', url: ctx.fhirBaseUrl },
    fhirVersion: '4.0.1',
    format: ['application/fhir+json', 'json'],
    rest: [
      {
        mode: 'server',
        security: {
          cors: true,
          service: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/restful-security-service', code: 'SMART-on-FHIR' }] }],
          // Where clients obtain tokens (SMART App Launch 1.0 `oauth-uris`).
          extension: [
            {
              url: 'http://fhir-registry.smarthealthit.org/StructureDefinition/oauth-uris',
              extension: [
                { url: 'authorize', valueUri: `${ctx.publicUrl}/oauth2/authorize` },
                { url: 'token', valueUri: `${ctx.publicUrl}/oauth2/token` },
              ],
            },
          ],
        },
        resource: resources,
        interaction: [{ code: 'transaction' }, { code: 'batch' }, { code: 'history-system' }],
        // Compartment search (docs/rest.md#compartment-search).
        compartment: ['http://hl7.org/fhir/CompartmentDefinition/patient'],
        operation: operations.filter((op) => op.system).map((op) => ({ name: op.name, definition: op.definition })),
      },
    ],
  };
}
