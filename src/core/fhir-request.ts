import type { RequestContext } from './context.js';

/** A FHIR REST request, independent of the HTTP framework. */
export interface FhirRequest {
  method: string;
  /** Path below the FHIR base, starting with `/` (e.g. `/Patient/123/_history/2`). */
  path: string;
  /** Query pairs in order, decoded (repeated names allowed). */
  query: Array<[string, string]>;
  /** Parsed JSON body (or form fields for `_search`), undefined when there is none. */
  body: unknown;
  /** Request headers with lower-case names. */
  headers: Record<string, string | undefined>;
  ctx: RequestContext;
}

/** What a handler returns; the HTTP adapter writes it. */
export interface FhirResult {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}
