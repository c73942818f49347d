import type { Resource } from '@medplum/fhirtypes';
import { splitValues } from '../fhir/search-values.js';
import { FORMAT_PARAMETERS } from '../core/fhir-request.js';
import { SEARCH_CONTROL_PARAMETERS, type ResourceRepository, type SearchQuery } from '../core/repository.js';
import { badRequest, preconditionFailed } from '../fhir/outcome.js';

/** Parameters that shape a search answer instead of selecting resources: ignored in conditional criteria. */
const RESULT_PARAMETERS = new Set([...SEARCH_CONTROL_PARAMETERS, ...FORMAT_PARAMETERS]);

/**
 * The search of a conditional interaction (FHIR R4 http.html#ccreate, #cond-update,
 * #3.1.0.7.1): `If-None-Exist: identifier=x` (a leading `Type?` is accepted) or the query of
 * `PUT|DELETE|PATCH [base]/Type?…`. Result parameters are dropped; at least one search
 * parameter must remain (`what` names the interaction in the 400).
 */
export function conditionalQuery(type: string, params: Array<[string, string]>, what: string): SearchQuery {
  const criteria = params.filter(([name, value]) => !RESULT_PARAMETERS.has(name.split(':')[0]) && value !== '');
  if (criteria.length === 0) throw badRequest(`${what} needs search parameters`);
  return { resourceType: type, params: normalizeCriteria(criteria) };
}

/**
 * One spelling per meaning, so that the conditional lock (taken on the criteria, see
 * `ResourceRepository.lockedSearch`) is the same lock for every spelling of one search
 * (docs/rest.md#conditional-create): the pairs arrive percent-decoded; within a value the
 * comma-separated alternatives (`a,b` — a `\,` is a literal comma) are de-duplicated and
 * sorted; repeated identical parameters count once; the parameters are sorted.
 */
export function normalizeCriteria(params: Array<[string, string]>): Array<[string, string]> {
  const seen = new Map<string, [string, string]>();
  for (const [name, value] of params) {
    const normal: [string, string] = [name, [...new Set(splitValues(value))].sort().join(',')];
    seen.set(JSON.stringify(normal), normal);
  }
  return [...seen.values()].sort(([a, x], [b, y]) => (a === b ? (x < y ? -1 : x > y ? 1 : 0) : a < b ? -1 : 1));
}

/** `If-None-Exist` as query pairs; undefined when the header is absent or blank. */
export function ifNoneExistParams(type: string, header: string | undefined): Array<[string, string]> | undefined {
  const value = header?.trim();
  if (!value) return undefined;
  const query = value.startsWith(`${type}?`) ? value.slice(type.length + 1) : value.startsWith('?') ? value.slice(1) : value;
  return [...new URLSearchParams(query)];
}

/**
 * The current matches of a conditional search, at most two (enough to tell 0, 1 and several),
 * under the search's lock: `repo` must come from `ResourceRepository.transaction`, and the
 * write that depends on the answer must happen in that same transaction.
 */
export async function conditionalMatches(repo: ResourceRepository, query: SearchQuery): Promise<Resource[]> {
  const result = await repo.lockedSearch({ resourceType: query.resourceType, params: [...query.params, ['_count', '2']] });
  return result.resources;
}

/**
 * The single match of a conditional search; several → 412 `Multiple matches`. `locked: false`
 * reads without locking, outside a transaction — for a write that then names the version it
 * read (conditional PATCH), which a concurrent change makes fail instead of being overwritten.
 */
export async function singleMatch(repo: ResourceRepository, query: SearchQuery, options: { locked?: boolean } = {}): Promise<Resource | undefined> {
  const matches =
    options.locked === false ? (await repo.search({ resourceType: query.resourceType, params: [...query.params, ['_count', '2']] })).resources : await conditionalMatches(repo, query);
  if (matches.length > 1) throw preconditionFailed('Multiple matches');
  return matches[0];
}
