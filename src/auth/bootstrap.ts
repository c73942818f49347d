import { createHash, randomBytes } from 'node:crypto';
import type { Practitioner, Project, Resource } from '@medplum/fhirtypes';
import type { Queryable } from '../core/database.js';
import type { FeatureEnv } from '../core/feature.js';
import type { ResourceRepository } from '../core/repository.js';
import { findSuperAdminProjectId } from '../storage/raw-resources.js';
import { createMembership, createUser } from './accounts.js';
import { normalizeEmail } from './email-address.js';

/**
 * The ids of the first-start resources: fixed for one database, different for every database
 * (derived from the random `installation.salt` its first migration made), so two installations'
 * super-admin projects never share an id. Two processes starting together on one empty
 * database both try to create the same ids; the primary key lets exactly one win, the other
 * sees the row and moves on — no lock needed, and a half-finished bootstrap (crash) is simply
 * completed by the next start.
 */
interface BootstrapIds {
  project: string;
  user: string;
  practitioner: string;
  membership: string;
}

async function bootstrapIds(q: Queryable): Promise<BootstrapIds> {
  const salt = (await q.query<{ salt: string }>('SELECT salt FROM installation WHERE singleton = 1')).rows[0]?.salt ?? '';
  return { project: stableId(salt, 'project'), user: stableId(salt, 'user'), practitioner: stableId(salt, 'practitioner'), membership: stableId(salt, 'membership') };
}

/**
 * The super-admin project's id (the first-start one, or another `superAdmin: true` project):
 * server-scoped users invited into projects are kept there (docs/invite.md#scopes).
 */
export async function superAdminProjectId(q: Queryable): Promise<string | undefined> {
  return findSuperAdminProjectId(q, (await bootstrapIds(q)).project);
}

/**
 * Creates the super-admin project, the super-admin User (LATTICE_ADMIN_EMAIL /
 * LATTICE_ADMIN_PASSWORD) with a Practitioner profile, and its admin membership, unless a
 * super-admin project already exists. A generated password is printed once to the console —
 * by the process whose User insert won, so the printed password is the stored one.
 */
export async function bootstrapSuperAdmin(env: FeatureEnv): Promise<void> {
  const repo = env.system;
  const { project: SUPER_PROJECT_ID, user: ADMIN_USER_ID, practitioner: ADMIN_PROFILE_ID, membership: ADMIN_MEMBERSHIP_ID } = await bootstrapIds(env.db);
  const existing = await findSuperAdminProjectId(env.db, SUPER_PROJECT_ID);
  if (existing !== undefined && (await repo.tryRead('ProjectMembership', ADMIN_MEMBERSHIP_ID))) return;
  if (existing !== undefined && existing !== SUPER_PROJECT_ID) return; // another super project

  const project: Project = { resourceType: 'Project', name: 'Super Admin', superAdmin: true, owner: { reference: `User/${ADMIN_USER_ID}` } };
  await createIfAbsent(repo, 'Project', SUPER_PROJECT_ID, () => repo.create(project, { id: SUPER_PROJECT_ID }));

  const generated = env.config.adminPassword ? undefined : randomBytes(12).toString('base64url');
  const userCreated = await createIfAbsent(repo, 'User', ADMIN_USER_ID, () =>
    createUser(env.system, {
      id: ADMIN_USER_ID,
      email: env.config.adminEmail,
      firstName: 'Super',
      lastName: 'Admin',
      password: env.config.adminPassword ?? generated,
      passwordCost: env.config.passwordCost,
      ownerProjectId: SUPER_PROJECT_ID,
    }),
  );
  if (userCreated && generated) {
    // The contract: printed once to the console (not the JSON log), so an operator can log in
    // (and knows the project for /admin/projects/<id>/…). A lost password: lattice admin set-password.
    console.log(`Lattice super admin created: ${normalizeEmail(env.config.adminEmail) ?? env.config.adminEmail} / password: ${generated} / project: ${SUPER_PROJECT_ID}`);
  }

  const profile: Practitioner = {
    resourceType: 'Practitioner',
    name: [{ given: ['Super'], family: 'Admin' }],
    meta: { project: SUPER_PROJECT_ID },
  };
  await createIfAbsent(repo, 'Practitioner', ADMIN_PROFILE_ID, () => repo.create(profile, { id: ADMIN_PROFILE_ID }));
  await createIfAbsent(repo, 'ProjectMembership', ADMIN_MEMBERSHIP_ID, () =>
    createMembership(env.system, {
      id: ADMIN_MEMBERSHIP_ID,
      projectId: SUPER_PROJECT_ID,
      member: { reference: `User/${ADMIN_USER_ID}` },
      profile: { reference: `Practitioner/${ADMIN_PROFILE_ID}` },
      admin: true,
    }),
  );
  env.log.info({ projectId: SUPER_PROJECT_ID, email: normalizeEmail(env.config.adminEmail) }, 'super admin ready');
}

/** Runs `create` unless the resource exists; true when this call created it. */
async function createIfAbsent(repo: ResourceRepository, type: string, id: string, create: () => Promise<Resource>): Promise<boolean> {
  if (await repo.tryRead(type, id)) return false;
  try {
    await create();
    return true;
  } catch (err) {
    // Lost a race with another process starting at the same time: its row is as good as ours.
    if (await repo.tryRead(type, id)) return false;
    throw err;
  }
}

/** A UUID-shaped id derived from the installation's salt and a name, identical in every process. */
function stableId(salt: string, name: string): string {
  const h = createHash('sha256').update(`lattice-bootstrap:${salt}:${name}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
