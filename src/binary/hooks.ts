import { createHash } from 'node:crypto';
import type { Resource } from '@medplum/fhirtypes';
import type { ResourceHook } from '../core/repository.js';
import { attachmentTypes } from '../fhir/definitions.js';
import type { ContentStore } from './content-store.js';
import { INLINE, STAGED, asStoredBinary } from './marks.js';
import type { SignedTarget, UrlSigner } from './signed-urls.js';

/**
 * The binary feature's write hooks (docs/rest.md#binary):
 * - Binary: its content is never in the stored JSON. A raw upload's staged content, or the
 *   bytes of a FHIR JSON `data`, become the new version's content in the write's transaction;
 *   on the way out `url` is a signed URL of the version's content (as Medplum's Binary has).
 * - Resources with attachments: an `Attachment.url` of `Binary/<id>` leaves the server as a
 *   signed URL, so whoever may read the holder can fetch the content; a signed URL written back
 *   is stored as `Binary/<id>` again (docs/rest.md#signed-urls).
 */
export function binaryHooks(store: ContentStore, signer: UrlSigner): ResourceHook[] {
  return [binaryHook(store, signer), attachmentHook(signer)];
}

function binaryHook(store: ContentStore, signer: UrlSigner): ResourceHook {
  return {
    types: ['Binary'],
    beforeWrite(resource, previous) {
      const binary = asStoredBinary(resource);
      delete binary.url;
      delete binary._contentSha256;
      const staged = binary[STAGED];
      if (staged) {
        binary._contentSha256 = staged.sha256;
      } else if (typeof binary.data === 'string') {
        const bytes = Buffer.from(binary.data, 'base64');
        binary[INLINE] = bytes;
        binary._contentSha256 = createHash('sha256').update(bytes).digest('hex');
      } else {
        // No new content (a PATCH, a JSON update without `data`): the version keeps its
        // predecessor's content (afterWrite maps it), so an update of the metadata loses no file.
        const kept = previous && asStoredBinary(previous)._contentSha256;
        if (kept) binary._contentSha256 = kept;
      }
      delete binary.data;
    },
    async afterWrite(tx, resource, previous) {
      const binary = asStoredBinary(resource);
      const staged = binary[STAGED];
      const inline = binary[INLINE];
      if (staged) await store.attach(tx, staged.id, resource);
      else if (inline) await store.insertInline(tx, inline, binary._contentSha256 as string, resource);
      else if (previous && binary._contentSha256) await store.carryOver(tx, resource, previous);
    },
    redact(resource) {
      const { _contentSha256: _hash, data: _data, ...rest } = asStoredBinary(resource);
      const url = rest.id && rest.meta?.versionId ? signer.sign(rest.meta.project, { id: rest.id, versionId: rest.meta.versionId }) : undefined;
      return url ? { ...rest, url } : rest;
    },
  };
}

/** `Binary/<id>` or `Binary/<id>/_history/<vid>`: an attachment URL this server resolves. */
const BINARY_REFERENCE = /^Binary\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/(\d{1,10}))?$/;

const isBinaryReference = (url: string): boolean => BINARY_REFERENCE.test(url);

function attachmentHook(signer: UrlSigner): ResourceHook {
  return {
    // Read when a write or read asks, not when the hook is made: computing the list parses the
    // definitions, which a start does not need (the build precomputes it).
    get types() {
      return attachmentTypes();
    },
    beforeWrite(resource) {
      rewriteUrls(resource, (url) => {
        const target = signer.parse(url);
        return target && `Binary/${target.id}${target.versionId ? `/_history/${target.versionId}` : ''}`;
      });
    },
    redact(resource) {
      // Copied only when something is rewritten: the stored resource may be a cached object.
      if (!hasUrl(resource, isBinaryReference)) return resource;
      const project = resource.meta?.project;
      const sign = (url: string) => {
        const m = BINARY_REFERENCE.exec(url);
        if (!m) return undefined;
        const target: SignedTarget = { id: m[1], ...(m[2] ? { versionId: m[2] } : {}) };
        return signer.sign(project, target);
      };
      const copy: Resource = structuredClone(resource);
      rewriteUrls(copy, sign);
      return copy;
    },
  };
}

/** Replaces every `url` string property (at any depth) for which `replace` answers a value. */
function rewriteUrls(value: unknown, replace: (url: string) => string | undefined): void {
  if (Array.isArray(value)) {
    for (const item of value) rewriteUrls(item, replace);
  } else if (typeof value === 'object' && value !== null) {
    const obj = value as Record<string, unknown>;
    for (const key of Object.keys(obj)) {
      const v = obj[key];
      if (key === 'url' && typeof v === 'string') {
        const next = replace(v);
        if (next !== undefined) obj[key] = next;
      } else if (typeof v === 'object' && v !== null) rewriteUrls(v, replace);
    }
  }
}

/** True when some `url` string property (at any depth) passes `test`. Run on every read of an attachment type: no allocation per object. */
function hasUrl(value: unknown, test: (url: string) => boolean): boolean {
  if (Array.isArray(value)) {
    for (const item of value) if (typeof item === 'object' && item !== null && hasUrl(item, test)) return true;
    return false;
  }
  if (typeof value !== 'object' || value === null) return false;
  const obj = value as Record<string, unknown>;
  for (const key in obj) {
    const v = obj[key];
    if (key === 'url' && typeof v === 'string' ? test(v) : typeof v === 'object' && v !== null && hasUrl(v, test)) return true;
  }
  return false;
}
