import type { AuthInfo } from '../core/auth.js';
import { forbidden } from '../fhir/outcome.js';

/**
 * True when the caller may administer `projectId`: a super admin, or an admin of exactly
 * that project. Used by every `/admin/projects/<id>/...` route.
 */
export function canAdministerProject(auth: AuthInfo, projectId: string): boolean {
  return auth.superAdmin || (auth.projectAdmin && auth.projectId === projectId);
}

/** Throws `OO(403, 'forbidden', 'Forbidden')` unless the caller administers `projectId`. */
export function requireProjectAdmin(auth: AuthInfo, projectId: string): void {
  if (!canAdministerProject(auth, projectId)) throw forbidden();
}
