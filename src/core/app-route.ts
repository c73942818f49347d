import type { RawContent } from './binary.js';
import type { RequestContext } from './context.js';

/**
 * A non-FHIR endpoint (`/auth/*`, `/oauth2/*`, `/admin/*`, `/.well-known/*`, pages), declared
 * by a feature module as data; `src/http/server.ts` registers it with the HTTP framework.
 */
export interface AppRoute {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Path with `:name` parameters, e.g. `/admin/projects/:projectId/invite`. */
  url: string;
  /** True when a valid bearer token is required (401 otherwise). */
  auth: boolean;
  /**
   * Accepted body encodings (default json). `stream`: any content type, not parsed and not
   * limited in size; `AppRequest.body` is the request stream (`AsyncIterable<Buffer>`), or
   * undefined without a body.
   */
  body?: 'json' | 'form' | 'json-or-form' | 'stream';
  handler(req: AppRequest): Promise<AppResult>;
}

export interface AppRequest {
  params: Record<string, string>;
  query: Record<string, string>;
  body: unknown;
  /** Lower-case header names. */
  headers: Record<string, string | undefined>;
  /** Client address (for rate limiting). */
  ip: string;
  /** For `auth: true` routes `ctx.auth` is the caller; otherwise an anonymous context. */
  ctx: RequestContext;
}

export interface AppResult {
  status: number;
  /** JSON-serialized unless it is a string. */
  body?: unknown;
  headers?: Record<string, string>;
  /** Default `application/json; charset=utf-8`. */
  contentType?: string;
  /**
   * Content streamed as the body instead, written as it is produced: large downloads in bounded
   * memory (a Bulk Data file, docs/export.md#downloading-files; signed Binary content URLs,
   * docs/rest.md#signed-urls).
   */
  raw?: RawContent;
}
