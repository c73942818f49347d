import type { Resource } from '@medplum/fhirtypes';

/** `ETag`, `Last-Modified` and (optionally) `Location` headers of a stored resource. */
export function versionHeaders(resource: Resource, fhirBaseUrl?: string): Record<string, string> {
  const headers: Record<string, string> = {};
  const vid = resource.meta?.versionId;
  if (vid) headers['ETag'] = `W/"${vid}"`;
  if (resource.meta?.lastUpdated) headers['Last-Modified'] = httpDate(resource.meta.lastUpdated);
  if (fhirBaseUrl && vid) headers['Location'] = `${fhirBaseUrl}/${resource.resourceType}/${resource.id}/_history/${vid}`;
  return headers;
}

/** `lastUpdated` as an HTTP date, remembered for the instants seen lately (a read asked again parses no date). */
function httpDate(instant: string): string {
  let date = httpDates.get(instant);
  if (date === undefined) {
    if (httpDates.size >= 1024) httpDates.clear();
    httpDates.set(instant, (date = new Date(instant).toUTCString()));
  }
  return date;
}

const httpDates = new Map<string, string>();

/**
 * A conditional read (docs/rest.md#conditional-read): true when the client's copy is current, so
 * the answer is 304 without a body. `If-None-Match` (a list of entity tags, weak comparison, or
 * `*`) decides when present; otherwise `If-Modified-Since` does (the version was last updated
 * no later than that second). An unparsable date is ignored (RFC 9110 §13.1.3).
 */
export function notModified(resource: Resource, headers: Record<string, string | undefined>): boolean {
  const vid = resource.meta?.versionId;
  const noneMatch = headers['if-none-match']?.trim();
  if (noneMatch) {
    if (noneMatch === '*') return true;
    if (vid === undefined) return false;
    return noneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === `"${vid}"`);
  }
  const since = headers['if-modified-since']?.trim();
  const updated = resource.meta?.lastUpdated;
  if (!since || !updated) return false;
  const sinceMs = Date.parse(since);
  if (Number.isNaN(sinceMs)) return false;
  return Math.floor(Date.parse(updated) / 1000) * 1000 <= sinceMs;
}

/**
 * Parses `If-Match: W/"3"` (or `"3"`, `3`, `*`) into the version id it names. A value of any
 * other shape (unbalanced quotes, a list) is returned as is: it names no version, so the
 * update fails with 412 like any other mismatch (FHIR R4 http.html#concurrency).
 */
export function parseIfMatch(value: string | undefined): string | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const trimmed = value.trim();
  const m = /^(?:W\/)?"([^"]*)"$|^([^"\s,]+)$/.exec(trimmed);
  return m ? (m[1] ?? m[2]) : trimmed;
}
