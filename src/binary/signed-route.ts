import type { Resource } from '@medplum/fhirtypes';
import type { AppRoute } from '../core/app-route.js';
import type { SystemRepository } from '../core/repository.js';
import { FhirError, forbidden } from '../fhir/outcome.js';
import type { ContentStore } from './content-store.js';
import { SIGNED_PATH, type SignedTarget, type UrlSigner } from './signed-urls.js';

/** 403 text of a signed URL that is not (or no longer) good for the file it names. */
export const INVALID_SIGNATURE = 'Invalid or expired signature';

/**
 * `GET /binary/<id>[/<versionId>]?Expires=…&Signature=…` (docs/rest.md#signed-urls): the
 * content a signed URL names, without an Authorization header. The Binary is read as the
 * system (the signature is the permission) and the signature checked against its project, so a
 * URL signed for one project's holder never reaches another project's file. No version: the
 * current one.
 */
export function signedContentRoutes(system: SystemRepository, store: ContentStore, signer: UrlSigner): AppRoute[] {
  const handler: AppRoute['handler'] = async (req) => {
    const target: SignedTarget = { id: req.params.id, ...(req.params.versionId ? { versionId: req.params.versionId } : {}) };
    let binary: Resource;
    try {
      binary = target.versionId ? await system.readVersion('Binary', target.id, target.versionId) : await system.read('Binary', target.id);
    } catch (err) {
      // Absent, deleted or not an id: no project to check a signature against.
      if (err instanceof FhirError && err.status < 500) throw forbidden(INVALID_SIGNATURE);
      throw err;
    }
    if (!signer.verify(binary.meta?.project, target, req.query.Expires, req.query.Signature)) throw forbidden(INVALID_SIGNATURE);
    const answer = await store.answer(binary, { range: req.headers.range, ifRange: req.headers['if-range'], ifNoneMatch: req.headers['if-none-match'] });
    return { status: answer.status, headers: { ...answer.headers, 'Cache-Control': 'private, max-age=60' }, ...(answer.raw ? { raw: answer.raw } : {}) };
  };
  return [
    { method: 'GET', url: `${SIGNED_PATH}/:id`, auth: false, handler },
    { method: 'GET', url: `${SIGNED_PATH}/:id/:versionId`, auth: false, handler },
  ];
}
