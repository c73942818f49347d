import type { ProjectMembership, Reference, User } from '@medplum/fhirtypes';
import type { Queryable } from '../core/database.js';
import type { ResourceRepository } from '../core/repository.js';
import { readRaw } from '../storage/raw-resources.js';
import { badRequest } from '../fhir/outcome.js';
import { normalizeEmail } from './email-address.js';
import { MIN_PASSWORD_LENGTH, hashPassword } from './password.js';

/**
 * Accounts: Users and ProjectMemberships as the login needs them. The resources are the
 * truth; `auth_user`/`auth_membership` mirror the few fields login looks up (kept in step by
 * the hooks in resource-hooks.ts, inside each write's transaction).
 *
 * Other features (invite) create users and memberships through `createUser` /
 * `createMembership`: they write as the system, because the REST path refuses these types
 * to anyone but super admins.
 */

/** A membership as login and tokens see it. */
export interface MembershipRow {
  id: string;
  project_id: string;
  member_type: 'User' | 'ClientApplication';
  member_id: string;
  profile: string | null;
  admin: boolean;
  /** False when `ProjectMembership.active` is false: it signs nobody in and its tokens stop. */
  active: boolean;
}

/**
 * Finds the user who logs in with `email`: the project-scoped user of `projectId` if any,
 * else the server-scoped user; without `projectId`, a project-scoped user only when exactly
 * one project has that e-mail (so the choice is never ambiguous).
 */
export async function findUserIdByEmail(db: Queryable, email: string, projectId?: string): Promise<string | undefined> {
  const rows = (
    await db.query<{ user_id: string; scope: string }>('SELECT user_id, scope FROM auth_user WHERE email = $1', [
      normalizeEmail(email) ?? '',
    ])
  ).rows;
  if (projectId) {
    const scoped = rows.find((r) => r.scope === projectId);
    if (scoped) return scoped.user_id;
  }
  const server = rows.find((r) => r.scope === '');
  if (server) return server.user_id;
  if (!projectId && rows.length === 1) return rows[0].user_id;
  return undefined;
}

/** The stored password hash of a user (read past the redaction, never leaves src/auth). */
export async function passwordHashOf(db: Queryable, userId: string): Promise<string | undefined> {
  return (await readRaw<User>(db, 'User', userId))?.passwordHash;
}

/** Active memberships of a user or client application, in a stable order (`all`: inactive ones too). */
export async function membershipsOf(db: Queryable, memberType: 'User' | 'ClientApplication', memberId: string, all = false): Promise<MembershipRow[]> {
  return (
    await db.query<MembershipRow>(
      `SELECT * FROM auth_membership WHERE member_type = $1 AND member_id = $2${all ? '' : ' AND active'} ORDER BY project_id, id`,
      [memberType, memberId],
    )
  ).rows;
}

/** One active membership by id, or undefined when it does not exist (or was deleted, or is inactive). */
export async function membershipById(db: Queryable, id: string): Promise<MembershipRow | undefined> {
  return (await db.query<MembershipRow>('SELECT * FROM auth_membership WHERE id = $1 AND active', [id])).rows[0];
}

/** Throws 400 when a password is too short. */
export function checkPasswordStrength(password: string): void {
  if (typeof password !== 'string' || password.length < MIN_PASSWORD_LENGTH) {
    throw badRequest(`Password must be at least ${MIN_PASSWORD_LENGTH} characters`, 'password');
  }
}

/** Input of `createUser`. */
export interface NewUser {
  email: string;
  firstName: string;
  lastName: string;
  /** Plain password (hashed here); omit for a user who sets one later (e.g. an invite). */
  password?: string;
  /** scrypt cost of the hash (`config.passwordCost`). */
  passwordCost: number;
  /** Project that owns the User resource (`meta.project`). */
  ownerProjectId: string;
  /** Set for a project-scoped user (e-mail unique in that project only). */
  scopedToProject?: boolean;
  /** Use this id (first-start bootstrap uses a fixed one). */
  id?: string;
}

/** Creates a User resource (`system`: the system repository); 409 when the e-mail is already taken in its scope. */
export async function createUser(system: ResourceRepository, input: NewUser): Promise<User> {
  const user: User = {
    resourceType: 'User',
    email: normalizeEmail(input.email),
    firstName: input.firstName,
    lastName: input.lastName,
    meta: { project: input.ownerProjectId },
  };
  if (input.scopedToProject) user.project = { reference: `Project/${input.ownerProjectId}` };
  if (input.password !== undefined) {
    checkPasswordStrength(input.password);
    user.passwordHash = await hashPassword(input.password, input.passwordCost);
  }
  return system.create(user, input.id ? { id: input.id } : {});
}

/** Sets (replaces) a user's password, hashed at `passwordCost`. */
export async function setPassword(system: ResourceRepository, userId: string, password: string, passwordCost: number): Promise<void> {
  checkPasswordStrength(password);
  const repo = system;
  const user = await repo.read<User>('User', userId);
  await repo.update({ ...user, passwordHash: await hashPassword(password, passwordCost) });
}

/** Input of `createMembership`. */
export interface NewMembership {
  projectId: string;
  /** `User/<id>` or `ClientApplication/<id>`. */
  member: Reference;
  /** `Practitioner/<id>`, `Patient/<id>`, … or the ClientApplication itself. */
  profile: Reference;
  admin?: boolean;
  id?: string;
}

/** Creates a ProjectMembership (stored in its project) as the system. */
export async function createMembership(system: ResourceRepository, input: NewMembership): Promise<ProjectMembership> {
  const membership: ProjectMembership = {
    resourceType: 'ProjectMembership',
    project: { reference: `Project/${input.projectId}` },
    user: input.member as ProjectMembership['user'],
    profile: input.profile as ProjectMembership['profile'],
    admin: input.admin === true,
    meta: { project: input.projectId },
  };
  return system.create(membership, input.id ? { id: input.id } : {});
}

/** `Type/id` → `[Type, id]`, or undefined when the reference is not of that form. */
export function splitReference(reference: string | undefined): [string, string] | undefined {
  const m = /^([A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})$/.exec(reference ?? '');
  return m ? [m[1], m[2]] : undefined;
}

/** The id of a `Type/<id>` reference, or undefined (also when it is of another type). */
export function referenceId(reference: string | undefined, type: string): string | undefined {
  const parts = splitReference(reference);
  return parts && parts[0] === type ? parts[1] : undefined;
}
