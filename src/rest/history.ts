import { badRequest } from '../fhir/outcome.js';
import { parseDateRange } from '../fhir/date-range.js';
import { bundle, intParam, pageLinks } from './bundle.js';
import type { FhirRequest, FhirResult } from '../core/fhir-request.js';

/** GET [base]/_history, [base]/Type/_history and [base]/Type/id/_history: Bundle `history`, newest first. */
export async function historyInteraction(req: FhirRequest, type: string | undefined, id?: string): Promise<FhirResult> {
  const count = intParam(req.query, '_count', 20, 1000);
  const offset = intParam(req.query, '_offset', 0, Number.MAX_SAFE_INTEGER);
  const since = sinceParam(req.query);
  const shared = id === undefined ? sharedParam(req.query) : undefined;
  const { entries, total } = await req.ctx.repo.history(type, id, { count, offset, since, shared });
  const base = req.ctx.fhirBaseUrl;
  const url = type === undefined ? `${base}/_history` : id ? `${base}/${type}/${id}/_history` : `${base}/${type}/_history`;
  return {
    status: 200,
    body: bundle(
      'history',
      entries.map((e) => ({
        fullUrl: `${base}/${e.resource.resourceType}/${e.resource.id}`,
        ...(e.deleted ? {} : { resource: e.resource }),
        request: { method: e.method, url: e.method === 'POST' ? e.resource.resourceType : `${e.resource.resourceType}/${e.resource.id}` },
        response: { status: e.deleted ? '204' : e.method === 'POST' ? '201' : '200', etag: `W/"${e.versionId}"`, lastModified: e.lastUpdated },
      })),
      total,
      pageLinks(url, req.query, { offset, count, total }),
    ),
  };
}

/**
 * `_since` as an ISO instant (the start of the given period for a partial date such as `2020`).
 * `Date.parse` accepts text PostgreSQL refuses (`1`, `-1`), so the value is read as a FHIR date here.
 */
function sinceParam(query: Array<[string, string]>): string | undefined {
  const raw = [...query].reverse().find(([k]) => k === '_since')?.[1];
  if (raw === undefined || raw === '') return undefined;
  const low = parseDateRange(raw)?.low;
  if (!low) throw badRequest(`Invalid value '${raw}' for _since`);
  return low;
}

/**
 * `shared=true` adds the shared content (the R4 base terminologies, other content without a
 * project) to type and system history, which otherwise list the caller's project only.
 */
function sharedParam(query: Array<[string, string]>): boolean {
  const raw = [...query].reverse().find(([k]) => k === 'shared')?.[1];
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  throw badRequest(`Invalid value '${raw}' for shared: expected true or false`);
}
