import type { Resource } from '@medplum/fhirtypes';
import { bundle, fullUrl, pageLinks } from './bundle.js';
import type { FhirRequest, FhirResult } from './types.js';

/** Parameters of the response format, not of the search. */
const FORMAT_PARAMS = new Set(['_format', '_pretty']);

/** GET [base]/Type?… and POST [base]/Type/_search: Bundle `searchset` with total and paging links. */
export async function searchInteraction(req: FhirRequest, type: string): Promise<FhirResult> {
  const params = [...req.query, ...formParams(req.body)].filter(([k]) => !FORMAT_PARAMS.has(k));
  const result = await req.ctx.repo.search({ resourceType: type, params });
  const base = req.ctx.fhirBaseUrl;
  const summaryCount = params.some(([k, v]) => k === '_summary' && v === 'count');
  return {
    status: 200,
    body: bundle(
      'searchset',
      summaryCount
        ? []
        : result.resources.map((resource: Resource) => ({ fullUrl: fullUrl(base, resource), resource, search: { mode: 'match' } })),
      result.total,
      pageLinks(`${base}/${type}`, params, result),
    ),
  };
}

/** Fields of a form-encoded `_search` body as query pairs. */
function formParams(body: unknown): Array<[string, string]> {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return [];
  return Object.entries(body as Record<string, unknown>).flatMap(([k, v]) =>
    (Array.isArray(v) ? v : [v]).map((x) => [k, String(x)] as [string, string]),
  );
}
