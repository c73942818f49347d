import type { CapabilityStatement, CapabilityStatementRestResource, Resource } from '@medplum/fhirtypes';
import type { OperationDispatcher } from '../core/operation.js';
import type { RequestContext } from '../core/context.js';
import type { FhirRequest, FhirResult } from '../core/fhir-request.js';
import type { SearchCapabilities } from '../core/search.js';
import { resourceTypes } from '../fhir/definitions.js';
import { badRequest } from '../fhir/outcome.js';

/** The server's identity, stated in both capability statements. */
export const SOFTWARE = { name: 'Lattice', version: '0.1.0', releaseDate: '2026-11-24' };

/** What the Subscriptions feature delivers (src/subscriptions). */
export interface SubscriptionCapabilities {
  channels: readonly string[];
  /** Path of the R4 websocket endpoint on the public URL, e.g. `/ws/subscriptions-r4`. */
  websocketPath: string;
}

/** R4's extension naming the websocket endpoint of the `websocket` channel. */
const WEBSOCKET_EXTENSION = 'http://hl7.org/fhir/StructureDefinition/capabilitystatement-websocket';

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
  search: SearchCapabilities,
  subscriptions: SubscriptionCapabilities,
): Promise<FhirResult> {
  const modes = req.query.filter(([k]) => k === 'mode').map(([, v]) => v);
  const mode = modes[modes.length - 1];
  if (mode === 'terminology') return { status: 200, body: await terminology(req.ctx, SOFTWARE) };
  if (mode !== undefined && mode !== 'full' && mode !== 'normative') {
    throw badRequest(`Invalid value '${mode}' provided for parameter 'mode' (full, normative or terminology)`);
  }
  return { status: 200, ...keptStatement(req.ctx, dispatcher, search, subscriptions) };
}

/**
 * The statement as last built and its JSON text, per search capabilities (one per server). Built
 * for every request it cost ~90 ms of the HTTP thread (890 KB: every type's parameters, includes
 * and reverse includes) on an endpoint anyone may call; it changes only with what it is built
 * from — the public URL and the registered operations, which are its key here; the search
 * parameters are fixed for the life of the process — so it is built once and its text sent again.
 * Its `date` is when it was built (R4: the date the statement last changed).
 */
const kept = new WeakMap<SearchCapabilities, { key: string; body: CapabilityStatement; json: string }>();

function keptStatement(ctx: RequestContext, dispatcher: OperationDispatcher, search: SearchCapabilities, subscriptions: SubscriptionCapabilities): { body: CapabilityStatement; json: string } {
  const key = `${ctx.publicUrl}\u0000${ctx.fhirBaseUrl}\u0000${dispatcher
    .capabilities()
    .map((op) => `${op.name} ${op.definition} ${op.system ? 1 : 0} ${op.resourceTypes.length}`)
    .join('\u0001')}`;
  const found = kept.get(search);
  if (found?.key === key) return found;
  const body = capabilityStatement(ctx, dispatcher, search, subscriptions);
  const made = { key, body, json: JSON.stringify(body) };
  kept.set(search, made);
  return made;
}

/**
 * The CapabilityStatement, built from what is really registered: resource types from the
 * definitions, search parameters with their modifiers, `_include`/`_revinclude` values and
 * compartments from the search index (the same functions a search goes through), operations
 * from the operations registry. test/rest-metadata.test.ts tries everything it lists.
 */
export function capabilityStatement(ctx: RequestContext, dispatcher: OperationDispatcher, search: SearchCapabilities, subscriptions: SubscriptionCapabilities): CapabilityStatement {
  const operations = dispatcher.capabilities();
  const resources: CapabilityStatementRestResource[] = [...resourceTypes()].sort().map((type) => ({
    type: type as CapabilityStatementRestResource['type'],
    interaction: INTERACTIONS.map((code) => ({ code })),
    versioning: 'versioned',
    readHistory: true,
    updateCreate: true,
    conditionalCreate: true,
    conditionalUpdate: true,
    conditionalRead: 'full-support',
    conditionalDelete: 'single',
    searchInclude: ['*', ...search.includes(type)],
    searchRevInclude: search.revIncludes(type),
    searchParam: search.parameters(type).map((sp) => ({
      name: sp.name,
      ...(sp.definition ? { definition: sp.definition } : {}),
      type: sp.type as NonNullable<CapabilityStatementRestResource['searchParam']>[number]['type'],
      // R4 has no element for modifiers: they are stated in the documentation, in this form.
      ...(sp.modifiers.length > 0 ? { documentation: `Modifiers: ${sp.modifiers.map((m) => `:${m}`).join(', ')}` } : {}),
      ...(sp.components ? { documentation: `Components: ${sp.components.join('$')}` } : {}),
    })),
    operation: operations
      .filter((op) => op.resourceTypes.includes(type))
      .map((op) => ({ name: op.name, definition: op.definition })),
    // R4 has no element for Subscription channels: they are stated here, in this form.
    ...(type === 'Subscription' ? { documentation: `Channels: ${subscriptions.channels.join(', ')}` } : {}),
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
    // JSON Patch and FHIRPath Patch (a Parameters resource), docs/rest.md#patch.
    patchFormat: ['application/json-patch+json', 'application/fhir+json'],
    rest: [
      {
        mode: 'server',
        extension: [{ url: WEBSOCKET_EXTENSION, valueUri: `${ctx.publicUrl.replace(/^http/, 'ws')}${subscriptions.websocketPath}` }],
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
        interaction: [{ code: 'transaction' }, { code: 'batch' }, { code: 'search-system' }, { code: 'history-system' }],
        // Compartment search (docs/rest.md#compartment-search).
        compartment: search.compartments(),
        operation: operations.filter((op) => op.system).map((op) => ({ name: op.name, definition: op.definition })),
      },
    ],
  };
}
