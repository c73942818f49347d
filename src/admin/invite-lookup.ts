import type { ProjectMembership, Resource, User } from '@medplum/fhirtypes';
import type { Queryable } from '../core/database.js';
import { ownedBy, resourceTable } from '../storage/scope.js';

/**
 * Reads the invite needs inside its transaction. They go through the membership mirror
 * (complete and indexed, see auth/memberships.ts) and raw `resource` rows rather than the Repository because the
 * Repository cannot read inside a caller's transaction, and a read on the Database while a
 * PGlite transaction is open would wait for that transaction (one connection).
 */

const LIVE = 'NOT r.deleted AND r.version_id > 0';
/** The membership mirror (auth/memberships.ts) as tenancy sees it. */
const MEMBERSHIP_TABLE = { alias: 'c', project: 'project_id' };

/** The current content of a live resource, unredacted. */
export async function readRaw<T extends Resource>(tx: Queryable, resourceType: string, id: string): Promise<T | undefined> {
  const res = await tx.query<{ content: string }>(
    `SELECT r.content FROM resource r WHERE r.resource_type = $1 AND r.id = $2 AND ${LIVE}`,
    [resourceType, id],
  );
  return parse<T>(res.rows[0]);
}

/** Like readRaw, but only when the resource belongs to `projectId`. */
export async function readInProject<T extends Resource>(
  tx: Queryable,
  resourceType: string,
  id: string,
  projectId: string,
): Promise<T | undefined> {
  const inProject = ownedBy(resourceTable('r'), projectId, 3);
  const res = await tx.query<{ content: string }>(
    `SELECT r.content FROM resource r WHERE r.resource_type = $1 AND r.id = $2 AND ${inProject.sql} AND ${LIVE}`,
    [resourceType, id, ...inProject.params],
  );
  return parse<T>(res.rows[0]);
}

/**
 * The User with this e-mail in a scope ('' = server-scoped, else a project id), through the
 * auth feature's `auth_user` mirror (200_auth.sql): its unique (email, scope) index is the
 * constraint that makes a second such User impossible, so invite looks where it is enforced.
 */
export async function findUserByEmail(tx: Queryable, scope: string, email: string): Promise<User | undefined> {
  const res = await tx.query<{ content: string }>(
    `SELECT r.content FROM auth_user c JOIN resource r ON r.resource_type = 'User' AND r.id = c.user_id
     WHERE c.scope = $1 AND c.email = $2 AND ${LIVE}`,
    [scope, email],
  );
  return parse<User>(res.rows[0]);
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
  const res = await tx.query<{ content: string }>(
    `SELECT r.content FROM auth_membership c
     JOIN resource r ON r.resource_type = 'ProjectMembership' AND r.id = c.id
     WHERE ${inProject.sql} AND ${where} AND ${LIVE}`,
    [...inProject.params, ...params],
  );
  return parse<ProjectMembership>(res.rows[0]);
}

/**
 * The oldest profile of a type in a project with this e-mail among its telecoms. A scan of the
 * project's resources of that type: profiles carry no claim, and the search index cannot be
 * read inside our transaction.
 */
export async function findProfileByEmail(
  tx: Queryable,
  projectId: string,
  resourceType: string,
  email: string,
): Promise<Resource | undefined> {
  const inProject = ownedBy(resourceTable('r'), projectId, 2);
  const res = await tx.query<{ content: string }>(
    `SELECT r.content FROM resource r
     WHERE r.resource_type = $1 AND ${inProject.sql} AND ${LIVE}
       AND EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(r.content::jsonb->'telecom') = 'array'
                                                        THEN r.content::jsonb->'telecom' ELSE '[]'::jsonb END) t
                   WHERE t->>'system' = 'email' AND lower(trim(t->>'value')) = $3)
     ORDER BY r.last_updated, r.id LIMIT 1`,
    [resourceType, ...inProject.params, email],
  );
  return parse<Resource>(res.rows[0]);
}

function parse<T>(row: { content: string } | undefined): T | undefined {
  return row ? (JSON.parse(row.content) as T) : undefined;
}
