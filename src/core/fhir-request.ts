import type { RawContent } from './binary.js';
import type { RequestContext } from './context.js';

/**
 * Query parameters that choose the answer's format (docs/errors.md#content-types), never a
 * search parameter or an operation input: taken out of `FhirRequest.query` where a request is
 * built (the HTTP adapter, Bundle entries), and ignored in conditional criteria.
 */
export const FORMAT_PARAMETERS: ReadonlySet<string> = new Set(['_format', '_pretty']);

/** A FHIR REST request, independent of the HTTP framework. */
export interface FhirRequest {
  /** The method to answer; a HEAD arrives as GET (the HTTP adapter sends no body). */
  method: string;
  /** Path below the FHIR base, starting with `/` (e.g. `/Patient/123/_history/2`). */
  path: string;
  /** Query pairs in order, decoded (repeated names allowed), without `FORMAT_PARAMETERS`. */
  query: Array<[string, string]>;
  /**
   * Parsed JSON body (or form fields for `_search`), undefined when there is none; a `RawBody`
   * for a Binary create or update whose content type is not FHIR JSON (docs/rest.md#binary).
   */
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
  /** Content instead of a JSON body (a Binary read as its own type, docs/rest.md#binary). */
  raw?: RawContent;
  /** The body already serialised (a kept answer, src/core/reusable-answer.ts): written as is unless pretty-printed. */
  json?: string;
}
