import type { ProjectMembership, User } from '@medplum/fhirtypes';
import type { Queryable } from '../core/database.js';
import type { ResourceHook } from '../core/repository.js';
import { FhirError, badRequest, issue } from '../fhir/outcome.js';
import { notifyMembershipChanged } from './access-state.js';
import { splitReference } from './accounts.js';

/**
 * The one mirror of ProjectMembership resources (`auth_membership`, 320_one_membership_table.sql):
 * login and tokens read who may act in which project from it, and its unique indexes make a
 * duplicate membership impossible — one per member, per member e-mail and per external id in a
 * project (docs/invite.md#concurrency). Kept in step inside every write's transaction.
 */

/** A caller may not remove the membership its own token stands for (docs/auth.md#managing-members). */
export const OWN_MEMBERSHIP = 'Cannot remove your own membership';

/** The conflicts a lost uniqueness race reports (docs/invite.md#conflicts). */
export const ALREADY_MEMBER = 'User is already a member of this project';
export const EXTERNAL_ID_EXISTS = 'External ID already exists in this project';

/**
 * A membership uniqueness index refused a write (another membership, committed or committed
 * while this one waited, holds the member, e-mail or external id). A 409 on its own; the
 * invite retries its whole transaction on it, and the retry sees the winner's rows.
 */
export class MembershipConflict extends FhirError {
  constructor(text: string) {
    super(409, [issue('conflict', text)]);
  }
}

/** Hooks on ProjectMembership and User writes that maintain `auth_membership`. */
export function membershipHooks(): ResourceHook[] {
  return [
    {
      types: ['ProjectMembership'],
      beforeWrite(resource) {
        const membership = resource as ProjectMembership;
        const project = splitReference(membership.project?.reference);
        if (project?.[0] !== 'Project') throw badRequest('ProjectMembership.project must reference a Project', 'ProjectMembership.project');
        const member = splitReference(membership.user?.reference);
        if (member?.[0] !== 'User' && member?.[0] !== 'ClientApplication') {
          throw badRequest('ProjectMembership.user must reference a User or ClientApplication', 'ProjectMembership.user');
        }
        const policy = membership.accessPolicy;
        if (policy !== undefined && splitReference(policy.reference)?.[0] !== 'AccessPolicy') {
          throw badRequest('ProjectMembership.accessPolicy must reference an AccessPolicy', 'ProjectMembership.accessPolicy');
        }
        // A membership is stored in the project it grants access to.
        membership.meta = { ...(membership.meta ?? {}), project: project[1] };
      },
      async afterWrite(tx, resource) {
        await mirrorMembership(tx, resource as ProjectMembership);
        await notifyMembershipChanged(tx, resource.id as string);
      },
      beforeDelete(previous, auth) {
        // Nobody locks themselves out: another admin (or a super admin) removes you.
        if (auth.membershipId !== undefined && auth.membershipId === previous.id) throw badRequest(OWN_MEMBERSHIP);
      },
      async afterDelete(tx, previous) {
        await tx.query('DELETE FROM auth_membership WHERE id = $1', [previous.id]);
        await notifyMembershipChanged(tx, previous.id as string);
      },
    },
    {
      types: ['User'],
      // A changed e-mail moves along in the user's memberships (and may collide there).
      afterWrite: (tx, resource) => guarded(() => tx.query('UPDATE auth_membership SET email = $2 WHERE member_type = \'User\' AND member_id = $1 AND email IS DISTINCT FROM $2', [
        resource.id,
        (resource as User).email ?? null,
      ])),
    },
  ];
}

async function mirrorMembership(tx: Queryable, m: ProjectMembership): Promise<void> {
  const [memberType, memberId] = splitReference(m.user?.reference) as [string, string];
  const projectId = (splitReference(m.project?.reference) as [string, string])[1];
  const email = memberType === 'User' ? await userEmail(tx, memberId) : undefined;
  await guarded(() =>
    tx.query(
      `INSERT INTO auth_membership (id, project_id, member_type, member_id, profile, admin, email, external_id, access_policy, active)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
       ON CONFLICT (id) DO UPDATE SET project_id = EXCLUDED.project_id, member_type = EXCLUDED.member_type,
         member_id = EXCLUDED.member_id, profile = EXCLUDED.profile, admin = EXCLUDED.admin,
         email = EXCLUDED.email, external_id = EXCLUDED.external_id, access_policy = EXCLUDED.access_policy, active = EXCLUDED.active`,
      [
        m.id,
        projectId,
        memberType,
        memberId,
        m.profile?.reference ?? null,
        m.admin === true,
        email ?? null,
        m.externalId || null,
        splitReference(m.accessPolicy?.reference)?.[1] ?? null,
        // `active: false` signs nobody in and stops the membership's tokens (docs/auth.md#revocation).
        m.active !== false,
      ],
    ),
  );
}

/** Runs a write of `auth_membership`, turning a unique-index violation into the 409 it means. */
async function guarded(write: () => Promise<unknown>): Promise<void> {
  try {
    await write();
  } catch (err) {
    const e = err as { code?: string; constraint?: string };
    if (e.code !== '23505') throw err;
    throw new MembershipConflict(e.constraint === 'auth_membership_external_id_once' ? EXTERNAL_ID_EXISTS : ALREADY_MEMBER);
  }
}

/** The stored (already normalised) e-mail of a user, read inside the write's transaction. */
async function userEmail(tx: Queryable, userId: string): Promise<string | undefined> {
  const res = await tx.query<{ email: string | null }>('SELECT email FROM auth_user WHERE user_id = $1', [userId]);
  return res.rows[0]?.email ?? undefined;
}
