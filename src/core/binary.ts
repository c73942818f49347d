import type { Resource } from '@medplum/fhirtypes';

/**
 * The Binary content contract (docs/rest.md#binary): raw bytes in and out, implemented by
 * `src/binary/`, used by the REST layer (raw create, update and read of Binary) and answered
 * over HTTP by the adapter, which alone knows the HTTP framework.
 */

/** Marks a `RawBody` (a parsed JSON body can never carry a symbol). */
export const RAW_BODY: unique symbol = Symbol('lattice.rawBody');

/** A request body that is content, not FHIR JSON: the unread request stream. */
export interface RawBody {
  [RAW_BODY]: true;
  /** The request's `Content-Type` (`application/octet-stream` when it had none). */
  contentType: string;
  /** The bytes as they arrive; fails with a 413 FhirError past `LATTICE_BINARY_LIMIT`. */
  stream: AsyncIterable<Uint8Array>;
}

/** An answer whose body is content: streamed by the HTTP adapter with the result's headers. */
export interface RawContent {
  /** `Content-Type` of the answer. */
  contentType: string;
  /** Bytes, or text written as UTF-8. */
  stream: AsyncIterable<Uint8Array | string>;
}

/** Content streamed in and kept aside until a Binary version takes it (`BinaryStore.stage`). */
export interface StagedContent {
  readonly id: string;
  readonly size: number;
}

/** Request headers a content answer honours (Range, conditional GET). */
export interface ContentRequest {
  range?: string;
  ifRange?: string;
  ifNoneMatch?: string;
}

/** A content answer: status (200, 206, 304, 416), headers, and the bytes (none for 304/416). */
export interface ContentAnswer {
  status: number;
  headers: Record<string, string>;
  raw?: RawContent;
}

export interface BinaryStore {
  /** Most bytes one Binary may hold (`LATTICE_BINARY_LIMIT`). */
  readonly limit: number;
  /**
   * Streams `body` into a staged content row owned by `projectId`, chunk by chunk in short
   * transactions; nothing of it is visible until a Binary version takes it (`withContent`). On
   * any failure (the client went away, the limit) the staged chunks are removed and the error
   * rethrown.
   */
  stage(projectId: string | undefined, body: RawBody, filename?: string): Promise<StagedContent>;
  /**
   * `binary`, marked so that its write (create or update, through any repository) takes the
   * staged content in the same transaction as the new version.
   */
  withContent<T extends Resource>(binary: T, staged: StagedContent): T;
  /** Removes staged content no version took (a refused write, an unchanged update). */
  release(staged: StagedContent): Promise<void>;
  /**
   * The content of a stored Binary version as an HTTP answer: `Content-Length`, a strong `ETag`,
   * `Range` (206, 416), `X-Content-Type-Options: nosniff` and an attachment disposition for
   * types a browser would run. `binary` must be one the caller may read.
   */
  answer(binary: Resource, request: ContentRequest): Promise<ContentAnswer>;
  /**
   * The content of a stored Binary version as base64 (FHIR JSON `data`), undefined without
   * content; a 406 FhirError when it is larger than `maxBytes`.
   */
  base64(binary: Resource, maxBytes: number): Promise<string | undefined>;
}

/** True for a request body that is Binary content (`RawBody`), not parsed JSON. */
export function isRawBody(body: unknown): body is RawBody {
  return typeof body === 'object' && body !== null && (body as Partial<RawBody>)[RAW_BODY] === true;
}
