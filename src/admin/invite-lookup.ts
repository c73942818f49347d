import type { ProjectMembership, User } from '@medplum/fhirtypes';
import type { Queryable } from '../core/database.js';
import { readRaw } from '../storage/raw-resources.js';
import { ownedBy } from '../storage/scope.js';

/**
 * Look-ups of an invite on its own transaction `tx` (they see what the invite wrote so far; a
 * read on the Database while a PGlite transaction is open would wait for it — one connection).
 * Users and memberships are found through the auth feature's mirrors (complete and indexed, see
 * auth/memberships.ts), then read unredacted — an update must keep `User.passwordHash` — through
 * storage/raw-resources.ts, which also holds the other raw reads the invite makes.
 */

/** The membership mirror (auth/memberships.ts) as tenancy sees it. */
const MEMBERSHIP_TABLE = { alias: 'c', project: 'project_id' };

/**
 * The User with this e-mail in a scope ('' = server-scoped, else a project id), through the
 * auth feature's `auth_user` mirror (200_auth.sql): its unique (email, scope) index is the
 * constraint that makes a second such User impossible, so invite looks where it is enforced.
 */
export async function findUserByEmail(tx: Queryable, scope: string, email: string): Promise<User | undefined> {
  const res = await tx.query<{ id: string }>('SELECT c.user_id AS id FROM auth_user c WHERE c.scope = $1 AND c.email = $2', [scope, email]);
  return firstLive<User>(tx, 'User', res.rows);
}

/** The membership of a user (`User/<id>`) in a project. */
export async function findMembershipOfUser(tx: Queryable, projectId: string, userRef: string): Promise<ProjectMembership | undefined> {
  const [memberType, memberId] = userRef.split('/');
  return membershipWhere(tx, projectId, 'c.member_type = $2 AND c.member_id = $3', [memberType, memberId ?? '']);
}

/** The membership in a project of any user with this e-mail (either scope). */
export async function findMembershipByEmail(tx: Queryable, projectId: string, email: string): Promise<ProjectMembership | undefined> {
  return membershipWhere(tx, projectId, 'c.email = $2', [email]);
}

/** The membership in a project with this external id. */
export async function findMembershipByExternalId(
  tx: Queryable,
  projectId: string,
  externalId: string,
): Promise<ProjectMembership | undefined> {
  return membershipWhere(tx, projectId, 'c.external_id = $2', [externalId]);
}

/** The membership in `projectId` (placeholder `$1`) matching `where` (placeholders from `$2`). */
async function membershipWhere(tx: Queryable, projectId: string, where: string, params: unknown[]): Promise<ProjectMembership | undefined> {
  const inProject = ownedBy(MEMBERSHIP_TABLE, projectId, 1);
  const res = await tx.query<{ id: string }>(`SELECT c.id FROM auth_membership c WHERE ${inProject.sql} AND ${where}`, [
    ...inProject.params,
    ...params,
  ]);
  return firstLive<ProjectMembership>(tx, 'ProjectMembership', res.rows);
}

/** The first of `rows` whose resource is live (the mirrors follow every write, so normally the first). */
async function firstLive<T extends User | ProjectMembership>(tx: Queryable, resourceType: string, rows: Array<{ id: string }>): Promise<T | undefined> {
  for (const { id } of rows) {
    const resource = await readRaw<T>(tx, resourceType, id);
    if (resource) return resource;
  }
  return undefined;
}
