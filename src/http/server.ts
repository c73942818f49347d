import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { parse as parseQueryString } from 'node:querystring';
import { Readable } from 'node:stream';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { AppRoute } from '../core/app-route.js';
import { RAW_BODY, type RawBody, type RawContent } from '../core/binary.js';
import type { SocketRoute } from '../core/socket-route.js';
import { ANONYMOUS, type AuthInfo, type Authenticator } from '../core/auth.js';
import type { RequestContext } from '../core/context.js';
import type { Database } from '../core/database.js';
import type { ResourceRepository } from '../core/repository.js';
import { FhirError, badRequest, issue, notFound, unsupportedMediaType } from '../fhir/outcome.js';
import type { FhirRouter } from '../rest/router.js';
import { checkMethod } from '../rest/route.js';
import { enforceBodyLimit, type BodyLimitRouteConfig } from './body-limit.js';
import { answerCors } from './cors.js';
import { requestLogger } from './request-logger.js';
import { attachSocketRoutes } from './websocket.js';
import { errorResponse } from './errors.js';
import { lazySchemaCompilers } from './lazy-schema-compilers.js';
import { NUL_IN_CONTENT, parseJsonBody } from './json-body.js';
import { fhirRequestInfo as readFhirRequest, type FhirRequestInfo, type ParsedBody } from './request-info.js';

const FHIR_PREFIX = '/fhir/R4';
const FHIR_CONTENT_TYPE = 'application/fhir+json; charset=utf-8';

/** Registers one feature route: its body checked, the caller authenticated, its result written. */
function registerRoute(app: FastifyInstance, services: HttpDeps, route: AppRoute): void {
  app.route({
    method: route.method,
    url: route.url,
    config: { streamedBody: route.body === 'stream' } satisfies BodyLimitRouteConfig,
    handler: async (request, reply) => {
      if (route.body !== 'stream') checkBodyKind(request, route.body ?? 'json');
      const ctx = await contextFor(services, request, route.auth);
      const result = await route.handler({
        params: request.params as Record<string, string>,
        query: featureQuery(request.url),
        body: (request.body as ParsedBody | undefined)?.value,
        headers: request.headers as Record<string, string | undefined>,
        ip: request.ip,
        ctx,
      });
      void reply.status(result.status).headers(result.headers ?? {});
      if (result.raw) return sendRaw(request, reply, result.raw);
      if (result.body === undefined) return reply.send();
      if (typeof result.body === 'string') return reply.type(result.contentType ?? 'text/plain; charset=utf-8').send(result.body);
      return reply.type(result.contentType ?? 'application/json; charset=utf-8').send(JSON.stringify(result.body));
    },
  });
}

/** `request.query` of every route: see `featureQuery`. */
const NO_QUERY: Record<string, string> = Object.freeze(Object.create(null) as Record<string, string>);

/** A feature route's query, read as Fastify's default parser (`node:querystring`) would. */
function featureQuery(url: string): Record<string, string> {
  const q = url.indexOf('?');
  return q < 0 || q === url.length - 1 ? {} : (parseQueryString(url.slice(q + 1)) as Record<string, string>);
}

/** The HTTP server as the rest of the application sees it. */
export type HttpServer = FastifyInstance;

/** What the HTTP adapter serves; every part is required (app.ts builds it). */
export interface HttpDeps {
  config: Config;
  log: Logger;
  /** Only for `/healthz`. */
  db: Database;
  authenticator: Authenticator;
  /** A repository scoped to a caller: the one handlers get in their context. */
  repository(auth: AuthInfo, since?: number): ResourceRepository;
  fhir: FhirRouter;
  routes: readonly AppRoute[];
  /** WebSocket endpoints (the Subscription websocket channel). */
  sockets: readonly SocketRoute[];
}

/**
 * Builds the Fastify application: body parsing, the FHIR catch-all route, feature routes,
 * request ids and the error mapping. Fastify stays inside `src/http/`.
 */
export function buildHttpServer(services: HttpDeps): FastifyInstance {
  const { routes } = services;
  const app = Fastify({
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- without it Fastify infers pino's Logger as its logger type, which its own route types then refuse
    loggerInstance: services.log as FastifyBaseLogger,
    bodyLimit: services.config.bodyLimit,
    // `request.ip` (throttling, logs) follows X-Forwarded-For only through configured proxies
    // (docs/auth.md#throttling); by default it is the connection's peer.
    trustProxy: services.config.trustedProxies.length > 0 ? services.config.trustedProxies : false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w\-.:]{1,128}$/.test(given) ? given : randomUUID();
    },
    return503OnClosing: true,
    // Ajv and fast-json-stringify load on first use: no Lattice route declares a schema.
    schemaController: { compilersFactory: lazySchemaCompilers },
    // Requests are logged by the onResponse hook below, with secrets in URLs redacted.
    logController: new LogController({ disableRequestLogging: true }),
    // Errors Fastify answers before any route or hook runs (a URL that is not valid
    // percent-encoding, an over-long path parameter): OperationOutcomes like every other error.
    frameworkErrors: (err, request, reply) => {
      const { status, body, headers } = errorResponse(err, request);
      void (reply as FastifyReply).status(status).headers(headers).header('X-Request-Id', request.id).type(FHIR_CONTENT_TYPE).send(JSON.stringify(body));
    },
    clientErrorHandler: answerMalformedHttp,
    // The request's logger becomes pino's child only when it logs (src/http/request-logger.ts).
    childLoggerFactory: (logger, bindings, options) => requestLogger(logger as Logger, bindings, options) as FastifyBaseLogger,
    // No query object per request: a FHIR request reads its query once with its path
    // (request-info.ts); a feature route reads its own (`featureQuery`).
    routerOptions: { querystringParser: () => NO_QUERY },
  });

  registerBodyParsers(app);
  enforceBodyLimit(app, services.config.bodyLimit, services.config.binary.limit);
  // The one hook every request runs (callback style: no promise each): its id on the answer —
  // set before anything can fail, so error answers (kept headers) and a CORS preflight carry it
  // too — and CORS for a request with an Origin.
  app.addHook('onRequest', (request, reply, done) => {
    void reply.header('X-Request-Id', request.id);
    if (request.headers.origin && answerCors(request, reply)) return;
    done();
  });
  // Where fhirRequestInfo keeps a FHIR request's parsed URL (declared up front: one object shape).
  app.decorateRequest('fhirInfo', null);
  // Hooks run on every request: callback style (no promise each), and the request log line
  // only when its level is on.
  if (services.log.isLevelEnabled('info')) {
    app.addHook('onResponse', (request, reply, done) => {
      request.log.info(
        { req: { method: request.method, url: redactUrl(request.url), remoteAddress: request.ip }, res: { statusCode: reply.statusCode }, responseTime: reply.elapsedTime },
        'request completed',
      );
      done();
    });
  }
  app.setErrorHandler((err, request, reply) => {
    const { status, body, headers } = errorResponse(err, request);
    void reply.status(status).headers(headers).type(FHIR_CONTENT_TYPE).send(JSON.stringify(body));
  });
  app.setNotFoundHandler((request, reply) => {
    const { status, body } = errorResponse(notFound(), request);
    void reply.status(status).type(FHIR_CONTENT_TYPE).send(JSON.stringify(body));
  });

  // docs/errors.md#health-check: answered within about a second, never queued behind user work.
  app.get('/healthz', async (_request, reply) => {
    const database = await services.db.health();
    const ok = database.state !== 'unavailable';
    void reply.status(ok ? 200 : 503).header('Cache-Control', 'no-store');
    // `pid`: which server process answered (several share the port, docs/deployment.md#workers).
    return { status: ok ? 'ok' : 'unavailable', database, pid: process.pid };
  });

  // A method the URL does not support is refused before the body is parsed, so e.g. a PATCH
  // with a JSON Patch body is told 405, not 415 about its content type.
  const fhirRoute = {
    onRequest: (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
      try {
        checkFhirMethod(request);
      } catch (err) {
        return done(err as Error);
      }
      done();
    },
  };
  // GET and HEAD go without that hook: every FHIR URL that names something answers them (405
  // is never their answer), and Fastify parses no body of theirs.
  const otherMethods = app.supportedMethods.filter((m) => m !== 'GET' && m !== 'HEAD');
  for (const url of [`${FHIR_PREFIX}/*`, FHIR_PREFIX]) {
    app.route({ method: ['GET', 'HEAD'], url, handler: (request, reply) => handleFhir(services, request, reply) });
    app.route({ method: otherMethods, url, ...fhirRoute, handler: (request, reply) => handleFhir(services, request, reply) });
  }
  // Binary create and update (docs/rest.md#binary): a body that is not FHIR JSON is the content,
  // streamed to the handler unread, limited by LATTICE_BINARY_LIMIT instead of the body limit.
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(['application/fhir+json', 'application/json+fhir'], { parseAs: 'string' }, jsonParser('json'));
    scope.addContentTypeParser('*', (request, payload, done) => {
      const contentType = String(request.headers['content-type'] ?? '').trim() || 'application/octet-stream';
      const value: RawBody = { [RAW_BODY]: true, contentType, stream: payload };
      done(null, { kind: 'raw', contentType, value } satisfies ParsedBody);
    });
    const binaryRoute = { ...fhirRoute, config: { binaryContent: true } satisfies BodyLimitRouteConfig };
    scope.post(`${FHIR_PREFIX}/Binary`, binaryRoute, (request, reply) => handleFhir(services, request, reply));
    scope.put(`${FHIR_PREFIX}/Binary/:id`, binaryRoute, (request, reply) => handleFhir(services, request, reply));
  });

  for (const route of routes.filter((r) => r.body !== 'stream')) registerRoute(app, services, route);
  // Streamed bodies (e.g. terminology imports): the raw request stream reaches the handler, in
  // a scope of their own where no parser reads the body and the body limit does not apply.
  const streamed = routes.filter((r) => r.body === 'stream');
  if (streamed.length > 0) {
    void app.register(async (scope) => {
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('*', (request, payload, done) => {
        done(null, { kind: 'stream', contentType: String(request.headers['content-type'] ?? ''), value: payload } satisfies ParsedBody);
      });
      for (const route of streamed) registerRoute(scope, services, route);
    });
  }
  attachSocketRoutes(app, services.sockets);
  return app;
}

async function handleFhir(services: HttpDeps, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const info = fhirRequestInfo(request);
  const { format, route } = info;
  // A Binary read answers its content in the stored type, XML included (docs/rest.md#binary).
  const binaryRead = route.segments[0] === 'Binary' && route.method === 'GET';
  if ((format && /xml/i.test(format)) || (!binaryRead && acceptsOnlyXml(request.headers.accept))) throw notAcceptable();
  if (format && !/^(json|application\/(fhir\+)?json|application\/json\+fhir)$/i.test(format.split(';')[0].trim())) {
    throw unsupportedMediaType(format);
  }
  const isSearch = request.method === 'POST' && info.path.endsWith('/_search');
  checkBodyKind(request, isSearch ? 'json-or-form' : request.method === 'PATCH' ? 'json-or-patch' : 'json');
  const isPublic = route.method === 'GET' && route.segments[0] === 'metadata' && info.path.replace(/\/+$/, '') === '/metadata';
  const ctx = await contextFor(services, request, !isPublic);
  const result = await services.fhir(
    {
      method: route.method,
      path: info.path,
      query: info.query,
      body: (request.body as ParsedBody | undefined)?.value,
      // `_format` overrides `Accept` (FHIR R4 http.html#mime-type): it names FHIR JSON here.
      headers: (format ? { ...request.headers, accept: 'application/fhir+json' } : request.headers) as Record<string, string | undefined>,
      ctx,
    },
    route,
  );
  void reply.status(result.status);
  if (result.headers) void reply.headers(result.headers);
  if (result.raw) return sendRaw(request, reply, result.raw);
  // A kept answer comes serialised (src/core/reusable-answer.ts).
  if (result.json !== undefined && !info.pretty) return void reply.type(FHIR_CONTENT_TYPE).send(result.json);
  if (result.body === undefined) return void reply.send();
  void reply.type(FHIR_CONTENT_TYPE).send(info.pretty ? JSON.stringify(result.body, null, 2) : JSON.stringify(result.body));
}

/**
 * Streams content (a Binary read, an export file): read from its source only as fast as the client takes it.
 * A HEAD answer has the headers only; its content is not read at all.
 */
function sendRaw(request: FastifyRequest, reply: FastifyReply, raw: RawContent): FastifyReply {
  void reply.type(raw.contentType);
  if (request.method === 'HEAD') return reply.send();
  return reply.send(Readable.from(raw.stream, { objectMode: false }));
}

/** True when an `Accept` header names XML and no JSON (nor a wildcard that covers it). */
function acceptsOnlyXml(accept: string | string[] | undefined): boolean {
  if (accept === undefined || (typeof accept === 'string' && !/xml/i.test(accept))) return false; // most requests
  const types = (Array.isArray(accept) ? accept.join(',') : (accept ?? '')).split(',').map((t) => t.split(';')[0].trim().toLowerCase()).filter(Boolean);
  return types.some((t) => t.includes('xml')) && !types.some((t) => t.includes('json') || t === '*/*' || t === 'application/*');
}

/** 406: Lattice answers JSON only (docs/errors.md#content-types). */
function notAcceptable(): FhirError {
  return new FhirError(406, [issue('not-supported', 'XML is not supported: this server answers application/fhir+json only')]);
}

/** The FHIR request line, read and classified once (the method check and the handler both need it). */
function fhirRequestInfo(request: FastifyRequest): FhirRequestInfo {
  const slot = request as FastifyRequest & { fhirInfo: FhirRequestInfo | null };
  return (slot.fhirInfo ??= readFhirRequest(request.method, request.url, FHIR_PREFIX));
}

/** 405 for a FHIR URL that exists but does not answer this method (rest/route.ts). */
function checkFhirMethod(request: FastifyRequest): void {
  checkMethod(fhirRequestInfo(request).route);
}

/**
 * Requests Node's HTTP parser refuses (headers over the size limit, bytes that are not HTTP):
 * no route runs, so the answer is written to the socket here — an OperationOutcome too.
 */
function answerMalformedHttp(err: Error & { code?: string; rawPacket?: unknown }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const raw = err.rawPacket;
  const head = Buffer.isBuffer(raw) && raw.subarray(0, 5).toString('latin1') === 'HEAD '; // its answer has no body
  const [status, code, text] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'too-costly', 'Request header fields too large']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'timeout', 'Request timeout']
        : [400, 'invalid', 'Malformed HTTP request'];
  const body = JSON.stringify({ resourceType: 'OperationOutcome', issue: [{ severity: 'error', code, details: { text } }] });
  if (!socket.writable) return void socket.destroy();
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: ${FHIR_CONTENT_TYPE}\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${head ? '' : body}`,
    () => socket.destroy(),
  );
}

/** Authenticates (when required) and builds the handler context. */
async function contextFor(services: HttpDeps, request: FastifyRequest, requireAuth: boolean): Promise<RequestContext> {
  const since = performance.now();
  const auth = requireAuth
    ? await services.authenticator.authenticate(request.headers as Record<string, string | undefined>, since, request.raw.socket)
    : ANONYMOUS;
  const acceptLanguage = typeof request.headers['accept-language'] === 'string' ? request.headers['accept-language'] : undefined;
  return new HandlerContext(services, request.id, auth, since, request.log as RequestContext['log'], acceptLanguage);
}

/**
 * A request's handler context. Its repository is made when a handler first uses it: a request
 * answered without reading data (a kept terminology answer, `/metadata`) makes none. Copying
 * the context (`{ ...ctx, repo }`) copies every other field: they are its own.
 */
class HandlerContext implements RequestContext {
  readonly publicUrl: string;
  readonly fhirBaseUrl: string;
  private made: ResourceRepository | undefined;

  constructor(
    private readonly services: HttpDeps,
    readonly requestId: string,
    readonly auth: AuthInfo,
    readonly since: number,
    readonly log: RequestContext['log'],
    readonly acceptLanguage: string | undefined,
  ) {
    this.publicUrl = services.config.publicUrl;
    this.fhirBaseUrl = `${this.publicUrl}${FHIR_PREFIX}`;
  }

  get repo(): ResourceRepository {
    return (this.made ??= this.services.repository(this.auth, this.since));
  }
}

/** JSON bodies everywhere; form bodies only where the route accepts them. */
function checkBodyKind(request: FastifyRequest, accepted: 'json' | 'form' | 'json-or-form' | 'json-or-patch'): void {
  const body = request.body as ParsedBody | undefined;
  if (!body || body.kind === 'raw') return; // only the Binary routes make raw bodies
  if (body.kind === 'json-patch' && accepted !== 'json-or-patch') throw unsupportedMediaType(body.contentType.split(';')[0].trim());
  if (body.kind === 'form' && accepted !== 'form' && accepted !== 'json-or-form') throw unsupportedMediaType(body.contentType);
  if (body.kind === 'json' && accepted === 'form') throw unsupportedMediaType(body.contentType);
}

const JSON_TYPES = ['application/json', 'application/fhir+json', 'application/json+fhir'];

/** Parser of JSON bodies; JSON Patch is JSON too, marked so only PATCH accepts it. */
function jsonParser(kind: 'json' | 'json-patch') {
  return (request: FastifyRequest, text: string | Buffer, done: (err: Error | null, body?: unknown) => void) => {
    const contentType = String(request.headers['content-type'] ?? '');
    let value: unknown;
    try {
      value = parseJsonBody(text as string);
    } catch (err) {
      return done(err as FhirError, undefined);
    }
    done(null, value === undefined ? undefined : ({ kind, contentType, value } satisfies ParsedBody));
  };
}

function registerBodyParsers(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(JSON_TYPES, { parseAs: 'string' }, jsonParser('json'));
  app.addContentTypeParser('application/json-patch+json', { parseAs: 'string' }, jsonParser('json-patch'));
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (request, text, done) => {
    // No prototype: a field named `__proto__` or `constructor` is a field like any other.
    const value = Object.create(null) as Record<string, string | string[]>;
    for (const [k, v] of new URLSearchParams(text as string)) {
      if (k.includes('\u0000') || v.includes('\u0000')) return done(badRequest(NUL_IN_CONTENT), undefined);
      const prev = value[k];
      value[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
    }
    done(null, { kind: 'form', contentType: String(request.headers['content-type']), value } satisfies ParsedBody);
  });
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (request, body, done) => {
    if ((body as Buffer).length === 0) return done(null, undefined);
    const type = String(request.headers['content-type'] ?? 'none').split(';')[0].trim();
    done(unsupportedMediaType(type), undefined);
  });
}

/** Query parameters whose values are secrets (OAuth codes and tokens, passwords). */
const SECRET_QUERY = /([?&](?:code|code_verifier|access_token|refresh_token|client_secret|password|secret|token)=)[^&#]*/gi;
/** The same under `/fhir/`, where `code` is a FHIR parameter (a terminology code, a search), not an OAuth code. */
const FHIR_SECRET_QUERY = /([?&](?:code_verifier|access_token|refresh_token|client_secret|password|secret|token)=)[^&#]*/gi;

/**
 * A request URL fit for the log: the secret of a set-password link and secret query values
 * are replaced by `[redacted]` (docs/errors.md#logs); a FHIR request's `code` stays readable.
 */
export function redactUrl(url: string): string {
  const secrets = /^\/fhir\//i.test(url) ? FHIR_SECRET_QUERY : SECRET_QUERY;
  return url.replace(/^(\/setpassword\/[^/?#]*\/)[^/?#]+/i, '$1[redacted]').replace(secrets, '$1[redacted]');
}
