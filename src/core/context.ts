import type { Logger } from 'pino';
import type { AuthInfo } from './auth.js';
import type { ResourceRepository } from './repository.js';

/**
 * What a handler gets for one request: who is calling and a repository already scoped to
 * them. Handlers never see HTTP objects, and never the whole application: anything else a
 * handler needs is given to it when its feature is wired (src/app.ts).
 */
export interface RequestContext {
  requestId: string;
  /** Public base URL of the server, e.g. `http://localhost:8080`. */
  publicUrl: string;
  /** FHIR base URL, e.g. `http://localhost:8080/fhir/R4`. */
  fhirBaseUrl: string;
  auth: AuthInfo;
  /** Repository scoped to `auth` (tenancy is enforced inside it). */
  repo: ResourceRepository;
  log: Logger;
  /**
   * When the request arrived (`performance.now()`): a barrier on the listening connection sent
   * after it covers the whole request (`Database.caughtUp`).
   */
  since?: number;
  /** The request's `Accept-Language` header (terminology displays), when given. */
  acceptLanguage?: string;
}
