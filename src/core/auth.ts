import type { AccessPolicy } from '@medplum/fhirtypes';

/**
 * Who is calling. The authenticator (src/auth) fills it in for every authenticated request;
 * what each role may see and write is decided in one place, `src/storage/scope.ts`
 * (docs/auth.md#roles).
 */
export interface AuthInfo {
  /** Project the caller acts in (from the token's membership); undefined only for the system. */
  projectId?: string;
  /** Super admins see and may change every project's data and the shared content. */
  superAdmin: boolean;
  /** Admin of `projectId`. */
  projectAdmin: boolean;
  membershipId?: string;
  userId?: string;
  /** Set when the caller is a ClientApplication (client credentials). */
  clientId?: string;
  /** Reference of the caller's profile, e.g. `Practitioner/123`. */
  profile?: string;
  /** The password login the caller's token descends from (absent for client credentials). */
  loginId?: string;
  /**
   * The scopes the caller's token was granted (its `scope` claim, split at spaces); what they
   * allow is decided with the membership's rights in `src/storage/scope.ts`.
   */
  scopes?: string[];
  /** The launch context's patient id (the token's `patient` claim): `patient/` scopes confine to its compartment. */
  patient?: string;
  /**
   * The access policy of the caller's membership (`ProjectMembership.accessPolicy`), read by the
   * authenticator on every request (docs/auth.md#access-policies); a policy reference that does
   * not resolve is an empty policy (grants nothing).
   */
  accessPolicy?: AccessPolicy;
}

/** The system itself (start-up jobs, loaders): no project, sees and writes everything. */
export const SYSTEM_AUTH: AuthInfo = Object.freeze({ superAdmin: true, projectAdmin: true });

/** A request that carries no caller identity (public routes): sees nothing but shared content. */
export const ANONYMOUS: AuthInfo = Object.freeze({ superAdmin: false, projectAdmin: false });

/** Turns request headers into the caller's identity; throws FhirError 401 when it cannot. */
export interface Authenticator {
  /**
   * `since`: when the request arrived (performance.now()), see `Database.caughtUp`.
   * `connection`: the connection the request came on (any object that stands for it), when
   * there is one: a client sends the same token on it request after request.
   */
  authenticate(headers: Record<string, string | undefined>, since?: number, connection?: object): Promise<AuthInfo>;
}
