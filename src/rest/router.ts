import { isResourceType } from '../fhir/definitions.js';
import { FhirError, issue, notFound } from '../fhir/outcome.js';
import { createResource, deleteResource, readResource, readVersion, updateResource } from './crud.js';
import { historyInteraction } from './history.js';
import { capabilityStatement } from './metadata.js';
import { searchInteraction } from './search.js';
import type { FhirRequest, FhirResult } from './types.js';

/**
 * Routes a FHIR REST request to its interaction. Paths are relative to the FHIR base.
 * `$` may arrive percent-encoded (`%24`); the HTTP adapter decodes path segments first.
 */
export async function routeFhirRequest(req: FhirRequest): Promise<FhirResult> {
  const segments = req.path.split('/').filter((s) => s.length > 0);
  const method = req.method === 'HEAD' ? 'GET' : req.method;
  const [first, second, third, fourth] = segments;

  if (segments.length === 1 && first === 'metadata' && method === 'GET') {
    return { status: 200, body: capabilityStatement(req.ctx) };
  }
  if (first?.startsWith('$')) {
    if (segments.length === 1) return operation(req, { code: first.slice(1) });
    throw notFound();
  }
  if (!first) throw notFound();
  if (!isResourceType(first)) {
    throw new FhirError(404, [{ ...issue('not-found', 'Not found'), diagnostics: `Unknown resource type: ${first}` }]);
  }
  const type = first;

  switch (segments.length) {
    case 1:
      if (method === 'GET') return searchInteraction(req, type);
      if (method === 'POST') return createResource(req, type);
      break;
    case 2:
      if (second.startsWith('$')) return operation(req, { code: second.slice(1), resourceType: type });
      if (second === '_search' && method === 'POST') return searchInteraction(req, type);
      if (second === '_history' && method === 'GET') return historyInteraction(req, type);
      if (method === 'GET') return readResource(req, type, second);
      if (method === 'PUT') return updateResource(req, type, second);
      if (method === 'DELETE') return deleteResource(req, type, second);
      break;
    case 3:
      if (third.startsWith('$')) return operation(req, { code: third.slice(1), resourceType: type, id: second });
      if (third === '_history' && method === 'GET') return historyInteraction(req, type, second);
      break;
    case 4:
      if (third === '_history' && method === 'GET') return readVersion(req, type, second, fourth);
      break;
  }
  throw notFound();
}

function operation(req: FhirRequest, target: { code: string; resourceType?: string; id?: string }): Promise<FhirResult> {
  const dispatcher = req.ctx.services.operations;
  if (!dispatcher) throw notFound(`Operation $${target.code} not found`);
  return dispatcher.dispatch(req, target);
}
