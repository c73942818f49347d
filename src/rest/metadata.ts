import type { CapabilityStatement, CapabilityStatementRestResource } from '@medplum/fhirtypes';
import type { OperationDispatcher } from '../core/operation.js';
import type { RequestContext } from '../core/context.js';
import { resourceTypes, searchParametersFor } from '../fhir/definitions.js';

const INTERACTIONS = ['read', 'vread', 'update', 'patch', 'delete', 'history-instance', 'history-type', 'create', 'search-type'] as const;

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
    status: 'active',
    date: new Date().toISOString(),
    kind: 'instance',
    software: { name: 'Lattice', version: '0.1.0' },
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
