import type { Project, ProjectMembership, Reference, Resource, User } from '@medplum/fhirtypes';
import { referenceId, splitReference } from '../auth/accounts.js';
import { superAdminProjectId } from '../auth/bootstrap.js';
import { hashPassword } from '../auth/password.js';
import type { RequestContext } from '../core/context.js';
import type { Database } from '../core/database.js';
import type { ResourceRepository } from '../core/repository.js';
import { enqueueEmail } from '../email/outbox.js';
import { inviteEmail } from '../email/templates.js';
import { FhirError, badRequest, conflict, notFound } from '../fhir/outcome.js';
import type { Queryable } from '../core/database.js';
import { ALREADY_MEMBER, EXTERNAL_ID_EXISTS, MembershipConflict } from '../auth/memberships.js';
import {
  findMembershipByEmail,
  findMembershipByExternalId,
  findMembershipOfUser,
  findUserByEmail,
} from './invite-lookup.js';
import { findRawByTelecomEmail, readRaw, readRawInProject } from '../storage/raw-resources.js';
import { parseInviteRequest, type InviteRequest } from './invite-request.js';
import { displayName, newMembership, newProfile, newUser, upsertedMembership } from './invite-resources.js';
import { createSetPasswordLink } from './set-password-store.js';
import type { TxWriter } from './tx-writer.js';

/** Contract text (docs/invite.md): `upsert` naming a profile other than the membership's. */
export const DIFFERENT_PROFILE = 'User is already a member of this project with a different profile';
/** Attempts of the invite transaction when a uniqueness claim was lost to a concurrent invite. */
const MAX_ATTEMPTS = 5;

/** What the invite needs beside the request: it acts for the server once the caller is checked. */
export interface InviteDeps {
  db: Database;
  system: ResourceRepository;
  writer: TxWriter;
  /** scrypt cost of a password given in the invite (`config.passwordCost`). */
  passwordCost: number;
}

/**
 * `POST /admin/projects/<projectId>/invite` (docs/invite.md). Checks in order:
 * 403 (not a super admin nor an admin of that project) → 404 (unknown project) → 400 (body).
 * Everything is written in one transaction. A concurrent identical invite loses a membership
 * uniqueness index (auth/memberships.ts); the transaction is then retried once the winner
 * committed, and the retry sees the winner's rows and answers the documented 409.
 */
export async function inviteUser(deps: InviteDeps, ctx: RequestContext, projectId: string, body: unknown): Promise<ProjectMembership> {
  const { writer } = deps;
  ctx.repo.scope.checkAdminister(projectId);
  const project = await deps.system.tryRead<Project>('Project', projectId);
  if (!project) throw notFound();
  const req = parseInviteRequest(body);
  const passwordHash = req.password ? await hashPassword(req.password, deps.passwordCost) : undefined; // scrypt: not inside the transaction
  for (let attempt = 1; ; attempt++) {
    try {
      return await deps.db.transaction((tx) =>
        new InviteRun(tx, writer, project, req, ctx.publicUrl).run(passwordHash),
      );
    } catch (err) {
      if (!(err instanceof MembershipConflict) || attempt >= MAX_ATTEMPTS) throw err;
      ctx.log.debug({ projectId, attempt, conflict: err.message }, 'invite lost a uniqueness race; retrying');
    }
  }
}

/** One attempt of an invite inside its transaction (docs/invite.md#steps). */
class InviteRun {
  private readonly projectId: string;

  constructor(
    private readonly tx: Queryable,
    private readonly writer: TxWriter,
    private readonly project: Project,
    private readonly req: InviteRequest,
    private readonly publicUrl: string,
  ) {
    this.projectId = project.id as string;
  }

  async run(passwordHash: string | undefined): Promise<ProjectMembership> {
    const { tx, req, projectId } = this;
    // 1. The user: by e-mail, in the request's scope.
    let user = req.email ? await findUserByEmail(tx, req.projectScoped ? projectId : '', req.email) : undefined;
    // 2. The profile the caller names (checked), else one with that e-mail in the project.
    const chosenProfile = req.profileReference ? await this.chosenProfile(req.profileReference) : undefined;
    await this.checkAccessPolicy();

    const existing = await this.existingMembership(user);
    if (existing) return this.upsert(existing, user, chosenProfile);
    if (req.externalId && (await findMembershipByExternalId(tx, projectId, req.externalId))) throw conflict(EXTERNAL_ID_EXISTS);

    let profile = chosenProfile ?? (req.email ? await findRawByTelecomEmail(tx, projectId, req.resourceType, req.email) : undefined);
    // 3. Create the user (with a set-password link) when absent.
    let setPasswordUrl: string | undefined;
    const createdUser = !user;
    if (!user) {
      const serverProjectId = req.projectScoped ? undefined : await superAdminProjectId(tx);
      user = await this.write(() => this.writer.create(tx, newUser(req, this.project, passwordHash, serverProjectId)));
      setPasswordUrl = await createSetPasswordLink(tx, user.id as string, this.publicUrl);
    } else if (req.sendEmail && !user.passwordHash) {
      // An existing user who never chose a password could not sign in without one.
      setPasswordUrl = await createSetPasswordLink(tx, user.id as string, this.publicUrl);
    }
    // 4. Create the profile when absent.
    profile ??= await this.writer.create(tx, newProfile(req, projectId, await this.patientForNewProfile()));
    // 5. The membership, with the overrides.
    const links = {
      project: this.project,
      user,
      profileReference: `${profile.resourceType}/${profile.id}`,
      profileDisplay: displayName(profile) ?? `${req.firstName} ${req.lastName}`,
    };
    const membership = await this.write(() => this.writer.create(tx, newMembership(req, links)));
    // 6. The e-mail, through the outbox of this same transaction.
    await this.sendEmail(user, createdUser, setPasswordUrl);
    return membership;
  }

  /**
   * A write that may collide with a concurrent invite: a lost membership claim, the auth
   * feature's unique (email, scope) index on `auth_user` (PostgreSQL error 23505 after
   * waiting for the other transaction), or its 'Email already registered' check. Each means
   * another transaction won; MembershipConflict makes `inviteUser` retry and answer from its rows.
   */
  private async write<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof MembershipConflict) throw err;
      if (err instanceof FhirError && err.status === 409) throw new MembershipConflict(err.message);
      if ((err as { code?: string }).code === '23505') throw new MembershipConflict(ALREADY_MEMBER);
      throw err;
    }
  }

  /** The user's membership in the project; 409 when the e-mail or external id is taken. */
  private async existingMembership(user: User | undefined): Promise<ProjectMembership | undefined> {
    const { tx, req, projectId } = this;
    if (user) {
      const mine = await findMembershipOfUser(tx, projectId, `User/${user.id}`);
      if (mine) return mine;
    }
    if (req.email) {
      // A user of the other scope with this e-mail is already a member.
      if (await findMembershipByEmail(tx, projectId, req.email)) throw conflict(ALREADY_MEMBER);
      return undefined;
    }
    // No e-mail: the external id identifies the member.
    const byExternalId = req.externalId ? await findMembershipByExternalId(tx, projectId, req.externalId) : undefined;
    if (byExternalId && !req.upsert) throw conflict(EXTERNAL_ID_EXISTS);
    return byExternalId;
  }

  /** `upsert: true` on an existing membership: same id, overrides applied. */
  private async upsert(existing: ProjectMembership, user: User | undefined, chosenProfile: Resource | undefined): Promise<ProjectMembership> {
    const { tx, req } = this;
    if (!req.upsert) throw conflict(ALREADY_MEMBER);
    const profileReference = existing.profile?.reference as string;
    if (chosenProfile && `${chosenProfile.resourceType}/${chosenProfile.id}` !== profileReference) throw conflict(DIFFERENT_PROFILE);
    if (req.externalId) {
      const holder = await findMembershipByExternalId(tx, this.projectId, req.externalId);
      if (holder && holder.id !== existing.id) throw conflict(EXTERNAL_ID_EXISTS);
    }
    const member = user ?? (await readRaw<User>(tx, 'User', referenceId(existing.user?.reference, 'User') ?? ''));
    if (!member) throw conflict(ALREADY_MEMBER);
    const [type, id] = profileReference.split('/');
    const profile = await readRaw(tx, type, id);
    const links = {
      project: this.project,
      user: member,
      profileReference,
      profileDisplay: (profile && displayName(profile)) ?? existing.profile?.display,
    };
    const membership = await this.write(() => this.writer.update(tx, upsertedMembership(existing, req, links)));
    const setPasswordUrl =
      req.sendEmail && !member.passwordHash ? await createSetPasswordLink(tx, member.id as string, this.publicUrl) : undefined;
    await this.sendEmail(member, false, setPasswordUrl);
    return membership;
  }

  /** `membership.profile`: must name a profile of the requested type in this project. */
  private async chosenProfile(reference: string): Promise<Resource> {
    const parts = splitReference(reference);
    if (parts && parts[0] !== this.req.resourceType) {
      throw badRequest('Profile resourceType does not match request', 'membership.profile');
    }
    const profile = parts ? await readRawInProject(this.tx, parts[0], parts[1], this.projectId) : undefined;
    if (!profile) throw badRequest('Profile does not belong to project', 'membership.profile');
    return profile;
  }

  /** `membership.accessPolicy` must be an AccessPolicy of the project (docs/invite.md#body-validation). */
  private async checkAccessPolicy(): Promise<void> {
    const reference = this.req.overrides.accessPolicy?.reference;
    if (reference === undefined) return;
    const parts = splitReference(reference);
    const policy = parts?.[0] === 'AccessPolicy' ? await readRawInProject(this.tx, 'AccessPolicy', parts[1], this.projectId) : undefined;
    if (!policy) throw badRequest('Access policy does not belong to project', 'membership.accessPolicy');
  }

  /** R4 requires `RelatedPerson.patient`: a Patient of the same project. */
  private async patientForNewProfile(): Promise<Reference | undefined> {
    if (this.req.resourceType !== 'RelatedPerson') return undefined;
    const reference = this.req.patient?.reference;
    if (typeof reference !== 'string' || reference === '') {
      throw badRequest('Patient is required to create a RelatedPerson', 'patient');
    }
    const id = referenceId(reference, 'Patient');
    if (!id || !(await readRawInProject(this.tx, 'Patient', id, this.projectId))) {
      throw badRequest('Patient does not belong to project', 'patient');
    }
    return { reference };
  }

  private async sendEmail(user: User, newUserCreated: boolean, setPasswordUrl: string | undefined): Promise<void> {
    const to = this.req.email ?? user.email;
    if (!this.req.sendEmail || !to) return; // an externalId-only user has no address to write to
    const message = inviteEmail({
      to,
      projectName: this.project.name ?? (this.project.id as string),
      firstName: user.firstName ?? this.req.firstName,
      newUser: newUserCreated,
      setPasswordUrl,
      signInUrl: this.publicUrl,
    });
    await enqueueEmail(this.tx, message);
  }
}
