import type { Resource } from '@medplum/fhirtypes';
import { badRequest, conflict, informational, FhirError, issue, preconditionFailed } from '../fhir/outcome.js';
import { notModified, parseIfMatch, versionHeaders } from './headers.js';
import type { FhirRequest, FhirResult } from '../core/fhir-request.js';
import type { UpdateResult } from '../core/repository.js';
import type { ResourceValidator } from '../core/validation.js';
import { conditionalQuery, ifNoneExistParams, singleMatch } from './conditional.js';
import { readShaper } from './search.js';
import { resolveConditionalReferences } from './conditional-references.js';

/**
 * POST [base]/Type → 201 with Location/ETag. A client-supplied id is ignored, even one that is
 * not a valid id (FHIR R4 http.html#create: "If an id is provided, the server SHALL ignore it").
 */
export async function createResource(req: FhirRequest, type: string, validator: ResourceValidator, options: { id?: string } = {}): Promise<FhirResult> {
  const resource = await checkedBody(req, type, validator, { ignoreId: true });
  const criteria = ifNoneExistParams(type, req.headers['if-none-exist']);
  if (!criteria) return written(req, await req.ctx.repo.create(resource, options), 201, true);
  // Conditional create (http.html#ccreate): search and create in one transaction, under the
  // search's lock, so identical concurrent requests create one resource.
  const query = conditionalQuery(type, criteria, 'If-None-Exist');
  const { resource: stored, created } = await req.ctx.repo.transaction(async (repo): Promise<UpdateResult> => {
    const match = await singleMatch(repo, query);
    if (match) return { resource: match, created: false };
    return { resource: await repo.create(resource, options), created: true };
  });
  return written(req, stored, created ? 201 : 200, created);
}

/**
 * PUT [base]/Type?search (http.html#cond-update): no match → create (with the body's id when
 * it has one and that id is free), one match → update it, several → 412 `Multiple matches`.
 */
export async function conditionalUpdate(req: FhirRequest, type: string, validator: ResourceValidator): Promise<FhirResult> {
  const resource = await checkedBody(req, type, validator);
  const query = conditionalQuery(type, req.query, 'Conditional update');
  const ifMatch = parseIfMatch(req.headers['if-match']);
  const { resource: stored, created } = await req.ctx.repo.transaction(async (repo): Promise<UpdateResult> => {
    const match = await singleMatch(repo, query);
    if (match) {
      if (resource.id !== undefined && resource.id !== match.id) throw badRequest('Resource ID does not match the matched resource', `${type}.id`);
      return repo.update({ ...resource, id: match.id }, { ifMatch });
    }
    if (ifMatch !== undefined) throw preconditionFailed();
    if (resource.id === undefined) return { resource: await repo.create(resource), created: true };
    if (await repo.tryRead(type, resource.id)) throw conflict(`Resource ${type}/${resource.id} exists but does not match the search`);
    return repo.update(resource);
  });
  return written(req, stored, created ? 201 : 200, created);
}

/** DELETE [base]/Type?search: no match → 200 (nothing to do), one → deleted, several → 412 `Multiple matches`. */
export async function conditionalDelete(req: FhirRequest, type: string): Promise<FhirResult> {
  const query = conditionalQuery(type, req.query, 'Conditional delete');
  const deleted = await req.ctx.repo.transaction(async (repo) => {
    const match = await singleMatch(repo, query);
    if (match?.id) await repo.delete(type, match.id, { ifMatch: parseIfMatch(req.headers['if-match']) });
    return match !== undefined;
  });
  return { status: 200, body: informational(deleted ? 'Deleted' : 'No match: nothing deleted') };
}

/** GET [base]/Type/id (`_summary`, `_elements` shape it: docs/rest.md#read). */
export async function readResource(req: FhirRequest, type: string, id: string): Promise<FhirResult> {
  const shape = readShaper(req.query);
  const resource = await req.ctx.repo.read(type, id);
  if (notModified(resource, req.headers)) return { status: 304, headers: versionHeaders(resource) };
  return { status: 200, body: shape(resource), headers: versionHeaders(resource) };
}

/** GET [base]/Type/id/_history/vid (`_summary`, `_elements` as for read). */
export async function readVersion(req: FhirRequest, type: string, id: string, vid: string): Promise<FhirResult> {
  const shape = readShaper(req.query);
  const resource = await req.ctx.repo.readVersion(type, id, vid);
  if (notModified(resource, req.headers)) return { status: 304, headers: versionHeaders(resource) };
  return { status: 200, body: shape(resource), headers: versionHeaders(resource) };
}

/** PUT [base]/Type/id → 200 (update) or 201 (create with the client's id). */
export async function updateResource(req: FhirRequest, type: string, id: string, validator: ResourceValidator): Promise<FhirResult> {
  const resource = await checkedBody(req, type, validator);
  if (resource.id !== id) throw badRequest('Resource ID does not match URL', `${type}.id`);
  const { resource: stored, created } = await req.ctx.repo.update(resource, { ifMatch: parseIfMatch(req.headers['if-match']) });
  return written(req, stored, created ? 201 : 200, created);
}

/**
 * DELETE [base]/Type/id → 200 with an OperationOutcome `Deleted`, also for a resource deleted
 * before (idempotent); an unknown id → 404, inside a transaction Bundle as alone
 * (docs/rest.md#delete). `If-Match` → 412 when stale.
 */
export async function deleteResource(req: FhirRequest, type: string, id: string): Promise<FhirResult> {
  await req.ctx.repo.delete(type, id, { ifMatch: parseIfMatch(req.headers['if-match']) });
  return { status: 200, body: informational('Deleted') };
}

/** The body of a create/update: a JSON object of the URL's type that passes validation (docs/rest.md#validation). */
async function checkedBody(req: FhirRequest, type: string, validator: ResourceValidator, options: { ignoreId?: boolean } = {}): Promise<Resource> {
  const body = req.body as Record<string, unknown> | undefined;
  if (body === undefined) throw badRequest(`Request body is empty: expected a ${type} resource`);
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest('Expected a JSON object resource');
  if (body.resourceType !== type) {
    throw badRequest(`Resource type '${String(body.resourceType)}' does not match URL type '${type}'`, 'resourceType');
  }
  let resource = body;
  if (options.ignoreId) {
    const { id: _ignored, ...rest } = body;
    resource = rest;
  }
  // Warnings (a QuestionnaireResponse's Questionnaire not found) do not refuse the write.
  const problems = (await validator.validate(resource, { repo: req.ctx.repo })).filter((p) => p.severity === 'error' || p.severity === 'fatal');
  if (problems.length > 0) throw new FhirError(400, problems);
  // Conditional references are resolved here as in a transaction, never stored as text.
  return resolveConditionalReferences(req.ctx.repo, resource as unknown as Resource);
}

/** Answer of a create/update/patch, honouring `Prefer: return=…`. */
export function written(req: FhirRequest, stored: Resource, status: number, withLocation: boolean): FhirResult {
  const headers = versionHeaders(stored, withLocation ? req.ctx.fhirBaseUrl : undefined);
  if (!withLocation) headers['Content-Location'] = `${req.ctx.fhirBaseUrl}/${stored.resourceType}/${stored.id}/_history/${stored.meta?.versionId}`;
  const prefer = /return=([a-zA-Z]+)/.exec(req.headers['prefer'] ?? '')?.[1];
  if (prefer === 'minimal') return { status, headers };
  if (prefer === 'OperationOutcome') {
    return {
      status,
      headers,
      body: { resourceType: 'OperationOutcome', issue: [{ ...issue('informational', 'Success'), severity: 'information' }] },
    };
  }
  return { status, body: stored, headers };
}
