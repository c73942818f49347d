import type { FastifyInstance } from 'fastify';

// Content-Range, Content-Disposition, Accept-Ranges and the request headers after If-None-Exist:
// Binary content read and uploaded from a browser (docs/rest.md#binary), as MedplumClient does.
const EXPOSED = 'ETag, Location, Content-Location, Last-Modified, X-Request-Id, WWW-Authenticate, Retry-After, Content-Range, Content-Disposition, Accept-Ranges';
const ALLOWED_HEADERS =
  'Authorization, Content-Type, Accept, Accept-Language, If-Match, If-None-Exist, Prefer, X-Request-Id, X-Security-Context, X-Medplum, Cache-Control, Range, If-Range, If-None-Match';

/**
 * CORS for browser apps (SMART apps, admin UIs on another origin). Any origin may call: access
 * is decided by the bearer token, never by cookies, so there are no credentials to protect.
 * A preflight (`OPTIONS` with `Access-Control-Request-Method`) is answered here, 204.
 */
export function registerCors(app: FastifyInstance): void {
  // Callback style, not async: this runs on every request and most have no Origin.
  app.addHook('onRequest', (request, reply, done) => {
    if (!request.headers.origin) return done();
    void reply.header('Access-Control-Allow-Origin', '*').header('Access-Control-Expose-Headers', EXPOSED);
    if (request.method === 'OPTIONS' && request.headers['access-control-request-method']) {
      // Answered here: no `done()`, the request goes no further.
      void reply
        .status(204)
        .header('Access-Control-Allow-Methods', 'GET, HEAD, POST, PUT, PATCH, DELETE')
        .header('Access-Control-Allow-Headers', ALLOWED_HEADERS)
        .header('Access-Control-Max-Age', '600')
        .send();
      return;
    }
    done();
  });
}
