import { PassThrough, type Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { FhirError, issue, tooLarge } from '../fhir/outcome.js';

/**
 * How much of an oversized body is read (and thrown away) so that its 413 reaches the client:
 * this many times `LATTICE_BODY_LIMIT` (docs/errors.md#body-limit).
 */
export const DRAIN_FACTOR = 4;

/** Route config of a route whose handler reads the raw body itself (no limit applies). */
export interface BodyLimitRouteConfig {
  streamedBody?: boolean;
  /**
   * Binary create/update (docs/rest.md#binary): a body that is not FHIR JSON is content, limited
   * by `LATTICE_BINARY_LIMIT` instead and streamed to the handler with backpressure.
   */
  binaryContent?: boolean;
}

/** Content types of a Binary create/update that carry the Binary resource rather than content. */
export const FHIR_JSON_BODY = /^\s*application\/(fhir\+json|json\+fhir)\s*(;|$)/i;

/** 413 of Binary content over `LATTICE_BINARY_LIMIT`. */
export function binaryTooLarge(limit: number): FhirError {
  return new FhirError(413, [issue('too-costly', `Binary content larger than LATTICE_BINARY_LIMIT (${limit} bytes)`)]);
}

/**
 * A body over `limit` bytes always gets its 413 OperationOutcome (docs/errors.md#body-limit).
 * Most clients send the whole body before they read the answer; a server that answers and then
 * closes the connection unread makes the client's next write fail (a broken pipe, a reset that
 * discards the answer). So the rest of the body is read and thrown away, up to
 * `DRAIN_FACTOR × limit` bytes, and the 413 is answered once the body has ended; a body beyond
 * that bound is answered at once and the connection closed (the client may then see the reset).
 *
 * A `Content-Length` over the limit is known before any byte is read; a chunked body is
 * counted as it arrives and passed on to the parser only up to the limit.
 */
export function enforceBodyLimit(app: FastifyInstance, limit: number, binaryLimit: number): void {
  const bound = limit * DRAIN_FACTOR;
  app.addHook('preParsing', (request, reply, payload, done) => {
    // No body (most requests: GETs): nothing to limit, and no route options to build.
    if (request.headers['content-length'] === undefined && request.headers['transfer-encoding'] === undefined) return done(null, payload);
    const config = request.routeOptions.config as BodyLimitRouteConfig | undefined;
    if (config?.streamedBody) return done(null, payload);
    if (config?.binaryContent && !FHIR_JSON_BODY.test(String(request.headers['content-type'] ?? ''))) {
      // Over the limit by its Content-Length: refused before a byte is read, the connection closed.
      if (Number(request.headers['content-length']) > binaryLimit) return done(closing(reply, binaryTooLarge(binaryLimit)));
      return done(null, limitedContent(payload, binaryLimit, () => closing(reply, binaryTooLarge(binaryLimit))));
    }
    const length = Number(request.headers['content-length']);
    if (length > limit) {
      if (length > bound) return done(closing(reply));
      drain(payload, bound, (overBound) => done(overBound ? closing(reply) : tooLarge()));
      return;
    }
    if (request.headers['transfer-encoding'] === undefined) return done(null, payload);
    done(null, capped(payload, limit, bound, () => closing(reply)));
  });
}

/** The 413, on a connection that is closed after it (the rest of the body is not read). */
function closing(reply: FastifyReply, error: FhirError = tooLarge()): Error {
  void reply.header('Connection', 'close');
  // Once the answer is out, the socket goes: a client still sending must not wait for a
  // window that never opens again.
  reply.raw.once('finish', () => reply.request.raw.socket?.destroy());
  return error;
}

/**
 * `payload` passed on with backpressure (the client is read only as fast as the content is
 * stored) while it stays within `limit` bytes; past it the stream fails with `overLimit()` and
 * nothing more is read. A client that goes away mid-body fails it too, so the reader cleans up.
 */
function limitedContent(payload: Readable, limit: number, overLimit: () => Error): Readable {
  const out = new PassThrough();
  let seen = 0;
  let ended = false;
  const stop = (err: Error) => {
    if (ended) return;
    ended = true;
    payload.off('data', onData).off('end', onEnd).off('error', stop).off('close', onClose);
    out.off('drain', onDrain);
    out.destroy(err);
  };
  const onData = (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > limit) {
      payload.pause();
      return stop(overLimit());
    }
    if (!out.write(chunk)) payload.pause();
  };
  const onDrain = () => payload.resume();
  const onEnd = () => {
    if (ended) return;
    ended = true;
    payload.off('data', onData).off('error', stop).off('close', onClose);
    out.end();
  };
  const onClose = () => stop(new Error('The client closed the connection before the end of the body'));
  payload.on('data', onData).on('end', onEnd).on('error', stop).on('close', onClose);
  out.on('drain', onDrain);
  return out;
}

/** Reads `payload` to its end, or until more than `bound` bytes came; `done(true)` in the second case. */
function drain(payload: Readable, bound: number, done: (overBound: boolean) => void): void {
  let seen = 0;
  const finish = (overBound: boolean) => {
    payload.off('data', onData).off('end', onEnd).off('error', onEnd);
    if (overBound) payload.pause();
    done(overBound);
  };
  const onData = (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > bound) finish(true);
  };
  const onEnd = () => finish(false);
  payload.on('data', onData).on('end', onEnd).on('error', onEnd);
  payload.resume();
}

/**
 * `payload` passed on up to `limit` bytes; past it nothing more is passed on, the rest is read
 * to the end (up to `bound` bytes in all) and the stream then fails with the 413.
 */
function capped(payload: Readable, limit: number, bound: number, overBound: () => Error): Readable {
  const out = new PassThrough();
  let seen = 0;
  const stop = (err: Error) => {
    payload.off('data', onData).off('end', onEnd).off('error', onError);
    out.destroy(err);
  };
  const onData = (chunk: Buffer) => {
    seen += chunk.length;
    if (seen <= limit) out.write(chunk);
    else if (seen > bound) {
      payload.pause();
      stop(overBound());
    }
  };
  const onEnd = () => {
    if (seen > limit) return stop(tooLarge());
    payload.off('data', onData).off('error', onError);
    out.end();
  };
  const onError = (err: Error) => stop(err);
  payload.on('data', onData).on('end', onEnd).on('error', onError);
  return out;
}
