import type { Logger } from 'pino';
import type { Repository } from './storage/repository.js';
import type { Services } from './services.js';

/** Who is calling. Filled in by the authenticator (src/auth) for every authenticated request. */
export interface AuthInfo {
  /** Project the caller acts in (from the token's membership); undefined only for the system. */
  projectId?: string;
  /** Super admins see and may change every project's data and the shared content. */
  superAdmin: boolean;
  /** Admin of `projectId`. */
  projectAdmin: boolean;
  membershipId?: string;
  userId?: string;
  clientId?: string;
  /** Reference of the caller's profile, e.g. `Practitioner/123`. */
  profile?: string;
}

/** Everything a handler may use for one request; handlers never see HTTP objects. */
export interface RequestContext {
  requestId: string;
  /** Public base URL of the server, e.g. `http://localhost:8080`. */
  publicUrl: string;
  /** FHIR base URL, e.g. `http://localhost:8080/fhir/R4`. */
  fhirBaseUrl: string;
  auth: AuthInfo;
  /** Repository already scoped to `auth` (tenancy is enforced inside it). */
  repo: Repository;
  log: Logger;
  services: Services;
  /** The request's `Accept-Language` header (terminology displays), when given. */
  acceptLanguage?: string;
}

/** The system itself (start-up jobs, loaders): no project, sees and writes everything. */
export const SYSTEM_AUTH: AuthInfo = Object.freeze({ superAdmin: true, projectAdmin: true });
