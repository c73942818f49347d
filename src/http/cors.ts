import type { FastifyReply, FastifyRequest } from 'fastify';

// Content-Range, Content-Disposition, Accept-Ranges and the request headers after If-None-Exist:
// Binary content read and uploaded from a browser (docs/rest.md#binary), as MedplumClient does.
const EXPOSED = 'ETag, Location, Content-Location, Last-Modified, X-Request-Id, WWW-Authenticate, Retry-After, Content-Range, Content-Disposition, Accept-Ranges';
const ALLOWED_HEADERS =
  'Authorization, Content-Type, Accept, Accept-Language, If-Match, If-None-Exist, Prefer, X-Request-Id, X-Security-Context, X-Medplum, Cache-Control, Range, If-Range, If-None-Match';

/**
 * CORS for browser apps (SMART apps, admin UIs on another origin). Any origin may call: access
 * is decided by the bearer token, never by cookies, so there are no credentials to protect.
 * Called by the server's one `onRequest` hook for a request with an `Origin`; a preflight
 * (`OPTIONS` with `Access-Control-Request-Method`) is answered here, 204, and true returned:
 * the request goes no further.
 */
export function answerCors(request: FastifyRequest, reply: FastifyReply): boolean {
  void reply.header('Access-Control-Allow-Origin', '*').header('Access-Control-Expose-Headers', EXPOSED);
  if (request.method !== 'OPTIONS' || !request.headers['access-control-request-method']) return false;
  void reply
    .status(204)
    .header('Access-Control-Allow-Methods', 'GET, HEAD, POST, PUT, PATCH, DELETE')
    .header('Access-Control-Allow-Headers', ALLOWED_HEADERS)
    .header('Access-Control-Max-Age', '600')
    .send();
  return true;
}
