import type { ClientApplication, ProjectMembership, Resource, User } from '@medplum/fhirtypes';
import type { AuthInfo } from '../context.js';
import { badRequest, conflict, forbidden } from '../fhir/outcome.js';
import type { Queryable } from '../storage/database.js';
import type { ResourceHook, ResourceHooks } from '../storage/resource-hooks.js';
import { normalizeEmail, passwordHashOf, splitReference } from './accounts.js';

/** Types only super admins (and the system) may write through the repository. */
export const ACCOUNT_TYPES = ['Project', 'User', 'ProjectMembership', 'ClientApplication'] as const;

/**
 * Registers the auth feature's repository hooks:
 * - account resources are written only by super admins / the system (403 otherwise), so a
 *   member cannot make itself admin or create users in its project through FHIR REST;
 * - `User.passwordHash` and `ClientApplication.secret` never leave the server (redact);
 * - the login lookup tables mirror User e-mails and memberships in the same transaction.
 */
export function registerAuthHooks(hooks: ResourceHooks): void {
  hooks.add({
    types: ACCOUNT_TYPES,
    beforeWrite: (_r, _p, auth) => requireSuperAdmin(auth),
    // Deleting a visible account resource (another project's stays 404 in the repository).
    beforeDelete: (_previous, auth) => requireSuperAdmin(auth),
  });
  hooks.add(userHook);
  hooks.add(membershipHook);
  hooks.add(clientHook);
}

function requireSuperAdmin(auth: AuthInfo): void {
  if (!auth.superAdmin) throw forbidden();
}

const userHook: ResourceHook = {
  types: ['User'],
  async beforeWrite(resource, _previous, _auth, db) {
    const user = resource as User;
    if (typeof user.email === 'string') user.email = normalizeEmail(user.email);
    if (user.email) {
      const taken = await db.query('SELECT 1 FROM auth_user WHERE email = $1 AND scope = $2 AND user_id <> $3', [
        user.email,
        userScope(user),
        user.id ?? '',
      ]);
      if (taken.rows.length > 0) throw conflict('Email already registered');
    }
    // Reads are redacted, so a read-modify-write never carries the hash: keep the stored one.
    if (user.passwordHash === undefined && user.id) {
      const stored = await passwordHashOf(db, user.id);
      if (stored) user.passwordHash = stored;
    }
  },
  async afterWrite(tx, resource) {
    const user = resource as User;
    if (!user.email) {
      await tx.query('DELETE FROM auth_user WHERE user_id = $1', [user.id]);
      return;
    }
    await tx.query(
      `INSERT INTO auth_user (user_id, email, scope) VALUES ($1, $2, $3)
       ON CONFLICT (user_id) DO UPDATE SET email = EXCLUDED.email, scope = EXCLUDED.scope`,
      [user.id, user.email, userScope(user)],
    );
  },
  async afterDelete(tx, previous) {
    await tx.query('DELETE FROM auth_user WHERE user_id = $1', [previous.id]);
  },
  redact(resource) {
    const { passwordHash: _hash, mfaSecret: _mfa, ...rest } = resource as User;
    return rest as Resource;
  },
};

/** '' for a server-scoped user, the project id for a project-scoped one. */
function userScope(user: User): string {
  return splitReference(user.project?.reference)?.[1] ?? '';
}

const membershipHook: ResourceHook = {
  types: ['ProjectMembership'],
  beforeWrite(resource) {
    const membership = resource as ProjectMembership;
    const project = splitReference(membership.project?.reference);
    if (project?.[0] !== 'Project') throw badRequest('ProjectMembership.project must reference a Project', 'ProjectMembership.project');
    const member = splitReference(membership.user?.reference);
    if (member?.[0] !== 'User' && member?.[0] !== 'ClientApplication') {
      throw badRequest('ProjectMembership.user must reference a User or ClientApplication', 'ProjectMembership.user');
    }
    // A membership is stored in the project it grants access to.
    membership.meta = { ...(membership.meta ?? {}), project: project[1] } as ProjectMembership['meta'];
  },
  async afterWrite(tx, resource) {
    const m = resource as ProjectMembership;
    const [memberType, memberId] = splitReference(m.user?.reference) as [string, string];
    const projectId = (splitReference(m.project?.reference) as [string, string])[1];
    await upsertMembership(tx, m.id as string, projectId, memberType, memberId, m.profile?.reference, m.admin === true);
  },
  async afterDelete(tx, previous) {
    await tx.query('DELETE FROM auth_membership WHERE id = $1', [previous.id]);
  },
};

async function upsertMembership(
  tx: Queryable,
  id: string,
  projectId: string,
  memberType: string,
  memberId: string,
  profile: string | undefined,
  admin: boolean,
): Promise<void> {
  await tx.query(
    `INSERT INTO auth_membership (id, project_id, member_type, member_id, profile, admin) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (id) DO UPDATE SET project_id = EXCLUDED.project_id, member_type = EXCLUDED.member_type,
       member_id = EXCLUDED.member_id, profile = EXCLUDED.profile, admin = EXCLUDED.admin`,
    [id, projectId, memberType, memberId, profile ?? null, admin],
  );
}

const clientHook: ResourceHook = {
  types: ['ClientApplication'],
  beforeWrite(resource) {
    // Secrets live hashed in auth_client_secret (set by the client endpoint), never in the resource.
    const client = resource as ClientApplication;
    delete client.secret;
    delete client.retiringSecret;
  },
  async afterDelete(tx, previous) {
    await tx.query('DELETE FROM auth_client_secret WHERE client_id = $1', [previous.id]);
  },
  redact(resource) {
    const { secret: _s, retiringSecret: _r, ...rest } = resource as ClientApplication;
    return rest as Resource;
  },
};
