import type { AuthInfo } from '../core/auth.js';

/**
 * The claims of the caller who wrote a Subscription, kept with it: notifications are read as
 * this caller (docs/rest.md#subscriptions). The login is not kept (a Subscription outlives the
 * session that made it) and neither is the access policy: both the membership and its policy
 * are looked up again at every delivery, so a removed member or a narrowed policy takes effect
 * on the next notification.
 */
export interface AuthorClaims {
  projectId: string;
  superAdmin: boolean;
  projectAdmin: boolean;
  membershipId: string;
  userId?: string;
  clientId?: string;
  profile?: string;
  scopes?: string[];
  patient?: string;
}

/** The claims to keep, or undefined for a writer that is not a member (the server itself). */
export function authorClaims(auth: AuthInfo): AuthorClaims | undefined {
  if (!auth.membershipId || !auth.projectId) return undefined;
  const claims: AuthorClaims = { projectId: auth.projectId, superAdmin: auth.superAdmin, projectAdmin: auth.projectAdmin, membershipId: auth.membershipId };
  if (auth.userId) claims.userId = auth.userId;
  if (auth.clientId) claims.clientId = auth.clientId;
  if (auth.profile) claims.profile = auth.profile;
  if (auth.scopes) claims.scopes = [...auth.scopes];
  if (auth.patient) claims.patient = auth.patient;
  return claims;
}

/** Stored claims back as an AuthInfo to authorize (undefined when none were kept). */
export function claimsAuth(stored: Record<string, unknown> | null): AuthInfo | undefined {
  if (!stored || typeof stored.membershipId !== 'string' || typeof stored.projectId !== 'string') return undefined;
  const c = stored as unknown as AuthorClaims;
  return Object.freeze({ ...c, superAdmin: c.superAdmin === true, projectAdmin: c.projectAdmin === true });
}
