import type { Binary, Resource } from '@medplum/fhirtypes';

/**
 * What a Binary on its way into the repository carries besides its JSON: symbol-keyed, so it
 * survives the repository's copies of the resource (object spread copies symbols) and never
 * reaches the stored JSON or a client (JSON.stringify skips them). The Binary hook (hooks.ts)
 * reads them in the write's transaction.
 */

/** Content staged by a raw upload that this write takes: its content row id and sha-256. */
export const STAGED: unique symbol = Symbol('lattice.binary.staged');
/** Content decoded from a FHIR JSON Binary's `data`, written with the version. */
export const INLINE: unique symbol = Symbol('lattice.binary.inline');

/**
 * The stored Binary's JSON: `data` is never stored; `_contentSha256` names the content so that
 * an update with other content is a new version and one with the same content is not. It is
 * removed before the resource leaves the server.
 */
export interface StoredBinary extends Binary {
  _contentSha256?: string;
  /** Medplum's non-standard element: a signed URL of the content (added on the way out). */
  url?: string;
  [STAGED]?: { id: string; sha256: string };
  [INLINE]?: Buffer;
}

export function asStoredBinary(resource: Resource): StoredBinary {
  return resource as StoredBinary;
}
