import type { Binary, Resource } from '@medplum/fhirtypes';
import type { BinaryStore, RawBody } from '../core/binary.js';
import type { FhirRequest, FhirResult } from '../core/fhir-request.js';
import type { ResourceValidator } from '../core/validation.js';
import { FhirError } from '../fhir/outcome.js';
import { written } from './crud.js';
import { parseIfMatch, versionHeaders } from './headers.js';
import { readShaper } from './search.js';

/** What the Binary interactions need beyond the request (from the router's options). */
export interface BinaryOptions {
  store: BinaryStore;
  validator: ResourceValidator;
  /** Most bytes of content served inside FHIR JSON `data` (`LATTICE_BODY_LIMIT`). */
  jsonDataLimit: number;
}

/** Media types that ask for the Binary resource itself rather than its content. */
const FHIR_JSON_TYPES = new Set(['application/fhir+json', 'application/json+fhir', 'application/json']);

/**
 * True when the client asks for the Binary resource (FHIR JSON) rather than its content
 * (FHIR R4 http.html#binary): the type it prefers most in `Accept` is a FHIR JSON type (the
 * HTTP adapter turns `_format` into that). No `Accept`, `*\/*` or any other type: the content.
 */
export function wantsResource(accept: string | undefined): boolean {
  let best: { type: string; q: number } | undefined;
  for (const part of (accept ?? '').split(',')) {
    const [type, ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    if (!type) continue;
    const qParam = params.find((p) => p.startsWith('q='));
    const q = qParam ? Number(qParam.slice(2)) : 1;
    if (Number.isNaN(q)) continue;
    if (!best || q > best.q) best = { type, q };
  }
  return best !== undefined && FHIR_JSON_TYPES.has(best.type);
}

/**
 * GET Binary/<id>[/_history/<vid>] of a Binary the caller may read: its content as its own type
 * (Range, ETag, safe headers: docs/rest.md#binary), or the resource with base64 `data` when the
 * client asks for FHIR JSON — up to `jsonDataLimit` bytes of content, else 406.
 */
export async function binaryRead(req: FhirRequest, binary: Resource, options: BinaryOptions): Promise<FhirResult> {
  if (wantsResource(req.headers.accept)) {
    const shape = readShaper(req.query);
    const data = await options.store.base64(binary, options.jsonDataLimit);
    return { status: 200, body: shape(data === undefined ? binary : { ...binary, data } as Binary), headers: versionHeaders(binary) };
  }
  const answer = await options.store.answer(binary, { range: req.headers.range, ifRange: req.headers['if-range'], ifNoneMatch: req.headers['if-none-match'] });
  return { status: answer.status, headers: answer.headers, ...(answer.raw ? { raw: answer.raw } : {}) };
}

/**
 * POST Binary / PUT Binary/<id> with content (any type but FHIR JSON): the body is the content,
 * `Content-Type` its type, `X-Security-Context` the Binary's `securityContext`, `_filename` the
 * name a download is offered under. The caller's rights are checked before a byte is read; the
 * content is staged while it streams in and taken by the Binary version in its write
 * transaction, so a failed or abandoned upload leaves nothing visible.
 */
export async function binaryWrite(req: FhirRequest, id: string | undefined, body: RawBody, options: BinaryOptions): Promise<FhirResult> {
  const repo = req.ctx.repo;
  repo.scope.checkCreate('Binary');
  repo.scope.checkAccess('Binary', id === undefined ? 'c' : 'u');
  const securityContext = req.headers['x-security-context']?.trim();
  const shell: Binary = {
    resourceType: 'Binary',
    ...(id !== undefined ? { id } : {}),
    contentType: body.contentType.trim().replace(/\s+/g, ' '),
    ...(securityContext ? { securityContext: { reference: securityContext } } : {}),
  };
  const problems = await options.validator.validate(shell);
  if (problems.length > 0) throw new FhirError(400, problems);
  const filename = req.query.find(([name]) => name === '_filename')?.[1];
  const staged = await options.store.stage(repo.scope.ownerOfNew('Binary', id, undefined), body, filename || undefined);
  try {
    const withContent = options.store.withContent(shell, staged);
    if (id === undefined) return written(req, await repo.create(withContent), 201, true);
    const { resource, created } = await repo.update(withContent, { ifMatch: parseIfMatch(req.headers['if-match']) });
    return written(req, resource, created ? 201 : 200, created);
  } finally {
    // Content no version took (a refused write, an update with the same content) goes at once.
    await options.store.release(staged);
  }
}

/** A FHIR JSON Binary as a client may send it back: Medplum's `url` (a signed URL) is not stored. */
export function withoutSignedUrl(body: unknown): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body) || typeof (body as { url?: unknown }).url !== 'string') return body;
  const { url: _url, ...rest } = body as Record<string, unknown>;
  return rest;
}
