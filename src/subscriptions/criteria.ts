import { SEARCH_CONTROL_PARAMETERS } from '../core/repository.js';
import { isResourceType } from '../fhir/definitions.js';
import { badRequest, type FhirError } from '../fhir/outcome.js';

/** A Subscription's `criteria`: a search of one type, as query pairs (decoded). */
export interface Criteria {
  resourceType: string;
  params: Array<[string, string]>;
}

/** Longest `criteria` accepted (it travels in the change feed's payloads and every match). */
export const MAX_CRITERIA_LENGTH = 2000;

const invalid = (text: string): FhirError => badRequest(`Invalid Subscription criteria: ${text}`, 'Subscription.criteria');

/**
 * Parses `Type` or `Type?name=value&…` (R4 Subscription.criteria). Refused, never ignored
 * (docs/rest.md#subscriptions): another shape, an unknown type, result parameters (`_count`,
 * `_sort`, `_include`, …, which select nothing), and what is evaluated across resources —
 * chained parameters, `_has` and `_filter` — which a notification could not keep within its
 * project. Whether the parameters themselves exist and their values parse is the search's
 * to say (the caller runs the search once).
 */
export function parseCriteria(text: unknown): Criteria {
  if (typeof text !== 'string' || text.trim() === '') throw invalid('criteria is required (a search such as Observation?code=1234-5)');
  if (text.length > MAX_CRITERIA_LENGTH) throw invalid(`longer than ${MAX_CRITERIA_LENGTH} characters`);
  const q = text.indexOf('?');
  const resourceType = q < 0 ? text : text.slice(0, q);
  if (!/^[A-Z][A-Za-z]+$/.test(resourceType) || !isResourceType(resourceType)) {
    throw invalid(`'${resourceType}' is not a resource type (expected Type?parameters, e.g. Observation?code=1234-5)`);
  }
  let params: Array<[string, string]>;
  try {
    params = q < 0 ? [] : [...new URLSearchParams(text.slice(q + 1))];
  } catch {
    throw invalid('the query is not valid URL encoding');
  }
  for (const [name] of params) {
    const code = name.split(':')[0];
    if (SEARCH_CONTROL_PARAMETERS.has(code) || code === '_format' || code === '_pretty') throw invalid(`result parameter '${code}' selects nothing and is not supported`);
    if (code === '_has') throw invalid("'_has' is not supported");
    if (code === '_filter') throw invalid("'_filter' is not supported");
    if (name.includes('.')) throw invalid(`chained parameter '${name}' is not supported`);
  }
  return { resourceType, params };
}
