import type { FhirRequest, FhirResult } from '../core/fhir-request.js';
import type { OperationCall, OperationDispatcher } from '../core/operation.js';
import type { ProfileValidator, ResourceValidator } from '../core/validation.js';
import type { SearchCapabilities } from '../core/search.js';
import { badRequest } from '../fhir/outcome.js';
import type { FhirPathEvaluator } from '../fhir/fhirpath-evaluator.js';
import { primitiveCheck } from '../fhir/validation/primitives.js';
import { isCompartmentType } from '../fhir/compartments.js';
import { conditionalDelete, conditionalUpdate, createResource, deleteResource, readResource, readVersion, updateResource } from './crud.js';
import { bundleInteraction } from './batch.js';
import { historyInteraction } from './history.js';
import { patchInteraction } from './patch.js';
import { metadataInteraction, type SubscriptionCapabilities, type TerminologyCapabilitiesSource } from './metadata.js';
import { checkRoute, type FhirRoute } from './route.js';
import { compartmentSearchInteraction, searchInteraction, systemSearchInteraction } from './search.js';
import { binaryRead, binaryWrite, withoutSignedUrl, type BinaryOptions } from './binary.js';
import type { BinaryStore } from '../core/binary.js';
import { isRawBody } from '../core/binary.js';

/** A FHIR REST endpoint: a request and its route (route.ts, classified where the request was built) in, result out. */
export type FhirRouter = (req: FhirRequest, route: FhirRoute) => Promise<FhirResult>;

/** Limits of the REST interactions (from the configuration). */
export interface FhirRouterOptions {
  /** Most entries a batch/transaction Bundle may have (`LATTICE_BUNDLE_MAX_ENTRIES`). */
  bundleMaxEntries: number;
  /** Time limit of a transaction Bundle of `entries` entries (ms; undefined: the database's own). */
  bundleTimeoutMs?: (entries: number) => number | undefined;
  /** `GET [base]/metadata?mode=terminology` (the terminology feature answers it). */
  terminologyCapabilities: TerminologyCapabilitiesSource;
  /** Validation of written resources: structure and required bindings (docs/rest.md#validation). */
  validator: ResourceValidator;
  /** Profile validation: a project's rule for writes (`Project.validateProfilesOnWrite`, docs/rest.md#validate). */
  profiles: ProfileValidator;
  /** FHIRPath Patch paths are evaluated here, off the HTTP thread and with a time limit. */
  fhirpath: FhirPathEvaluator;
  /** What search supports, for `/metadata` (the search index states it). */
  search: SearchCapabilities;
  /** Binary content (docs/rest.md#binary) and the most of it served inside FHIR JSON. */
  binary: { store: BinaryStore; jsonDataLimit: number };
  /** Subscription channels and the websocket endpoint's path, for `/metadata` (docs/rest.md#subscriptions). */
  subscriptions: SubscriptionCapabilities;
}

/** The FHIR router over the interactions below and the given operations. */
export function createFhirRouter(operations: OperationDispatcher, options: FhirRouterOptions): FhirRouter {
  return (req, route) => routeFhirRequest(req, route, operations, options);
}

/**
 * Routes a FHIR REST request to its interaction. Paths are relative to the FHIR base.
 * `$` may arrive percent-encoded (`%24`); the HTTP adapter decodes path segments first.
 *
 * Before any interaction runs, the URL itself is checked: an unknown type is 404, a method the
 * URL does not support is 405 (with `Allow`), an id that is not a FHIR id is 400 — so the
 * storage layer never sees a key that cannot exist.
 */
async function routeFhirRequest(req: FhirRequest, route: FhirRoute, operations: OperationDispatcher, options: FhirRouterOptions): Promise<FhirResult> {
  const { segments, method } = route;
  const [first, second, third, fourth] = segments;
  checkRoute(route); // from here on the path has one of the shapes route.ts accepts

  if (segments.length === 0 && method === 'GET') return systemSearchInteraction(req);
  if (method !== 'GET' && method !== 'DELETE' && !segments.some((s) => s.startsWith('$'))) {
    // Writes follow the caller's project's profile rule: its validator, bound once per request.
    options = { ...options, validator: await options.profiles.writeValidator(options.validator, { repo: req.ctx.repo, projectId: req.ctx.auth.projectId }) };
  }
  if (segments.length === 0) {
    // Bundle entries run through this router again, with the validator the Bundle chooses.
    const routeWith = (validator: ResourceValidator): FhirRouter => (entry, entryRoute) => routeFhirRequest(entry, entryRoute, operations, { ...options, validator });
    return bundleInteraction(req, routeWith, { maxEntries: options.bundleMaxEntries, timeoutMs: options.bundleTimeoutMs }, options.validator);
  }
  if (segments.length === 1 && first === '_history') return historyInteraction(req, undefined);
  if (segments.length === 1 && first === 'metadata') return metadataInteraction(req, operations, options.terminologyCapabilities, options.search, options.subscriptions);
  if (first?.startsWith('$')) return operations.dispatch(req, { code: first.slice(1) });
  const type = first;
  if (type === 'Binary') {
    const answered = await binaryInteraction(req, route, { ...options.binary, validator: options.validator });
    if (answered) return answered;
  }
  if (segments.length === 1) {
    if (method === 'GET') return searchInteraction(req, type);
    if (method === 'PUT') return conditionalUpdate(req, type, options.validator);
    if (method === 'DELETE') return conditionalDelete(req, type);
    if (method === 'PATCH') return patchInteraction(req, type, undefined, options.validator, options.fhirpath);
    return createResource(req, type, options.validator);
  }
  if (segments.length === 2 && second.startsWith('$')) return operations.dispatch(req, { code: second.slice(1), resourceType: type });
  if (segments.length === 2 && second === '_search') return searchInteraction(req, type);
  if (segments.length === 2 && second === '_history') return historyInteraction(req, type);

  // Instance level: [type]/[id], [type]/[id]/$op, [type]/[id]/_history[/vid], [compartment]/[id]/[type]
  checkId(type, second);
  if (segments.length === 3 && third.startsWith('$')) return operations.dispatch(req, { code: third.slice(1), resourceType: type, id: second } satisfies OperationCall);
  if (segments.length === 3 && third !== '_history' && isCompartmentType(type)) return compartmentSearchInteraction(req, type, second, third);
  if (segments.length === 3) return historyInteraction(req, type, second);
  if (segments.length === 4) return readVersion(req, type, second, fourth);
  if (method === 'GET') return readResource(req, type, second);
  if (method === 'PUT') return updateResource(req, type, second, options.validator);
  if (method === 'PATCH') return patchInteraction(req, type, second, options.validator, options.fhirpath);
  return deleteResource(req, type, second);
}

/**
 * The interactions whose Binary form differs (docs/rest.md#binary): a create or update whose body
 * is content, a read or vread (content or FHIR JSON with `data`). A FHIR JSON write has its
 * signed `url` taken out, then runs as for any type (undefined: the caller goes on).
 */
async function binaryInteraction(req: FhirRequest, route: FhirRoute, options: BinaryOptions): Promise<FhirResult | undefined> {
  const { segments, method } = route;
  const id = segments[1];
  if (isRawBody(req.body)) {
    if (segments.length === 1 && method === 'POST') return binaryWrite(req, undefined, req.body, options);
    if (segments.length === 2 && method === 'PUT') {
      checkId('Binary', id);
      return binaryWrite(req, id, req.body, options);
    }
    return undefined;
  }
  if (method === 'POST' || method === 'PUT') req.body = withoutSignedUrl(req.body);
  if (method !== 'GET' || (segments.length !== 2 && segments.length !== 4) || id.startsWith('$') || id === '_history' || id === '_search') return undefined;
  if (segments.length === 4 && segments[2] !== '_history') return undefined;
  checkId('Binary', id);
  const binary = segments.length === 2 ? await req.ctx.repo.read('Binary', id) : await req.ctx.repo.readVersion('Binary', id, segments[3]);
  return binaryRead(req, binary, options);
}

/** A logical id in the URL must be a FHIR id; anything else cannot name a resource. */
function checkId(type: string, id: string): void {
  const problem = primitiveCheck('id')?.check(id);
  if (problem) throw badRequest(problem.text, `${type}.id`);
}
