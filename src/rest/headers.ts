import type { Resource } from '@medplum/fhirtypes';

/** `ETag`, `Last-Modified` and (optionally) `Location` headers of a stored resource. */
export function versionHeaders(resource: Resource, fhirBaseUrl?: string): Record<string, string> {
  const headers: Record<string, string> = {};
  const vid = resource.meta?.versionId;
  if (vid) headers['ETag'] = `W/"${vid}"`;
  if (resource.meta?.lastUpdated) headers['Last-Modified'] = new Date(resource.meta.lastUpdated).toUTCString();
  if (fhirBaseUrl && vid) headers['Location'] = `${fhirBaseUrl}/${resource.resourceType}/${resource.id}/_history/${vid}`;
  return headers;
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
