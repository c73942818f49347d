import type { Bundle, Project, ProjectMembership, User } from '@medplum/fhirtypes';
import { OWN_MEMBERSHIP } from '../auth/memberships.js';
import { referenceId } from '../auth/accounts.js';
import type { AppRequest, AppRoute } from '../core/app-route.js';
import type { Database } from '../core/database.js';
import type { SystemRepository } from '../core/repository.js';
import { enqueueEmail } from '../email/outbox.js';
import { inviteEmail } from '../email/templates.js';
import { badRequest, informational, notFound } from '../fhir/outcome.js';
import { listRawInProject, readRaw, readRawInProject } from '../storage/raw-resources.js';
import { updatedMembership } from './member-update.js';
import { createSetPasswordLink } from './set-password-store.js';
import type { TxWriter } from './tx-writer.js';

/**
 * Members managed by a project's admins and by super admins (docs/auth.md#managing-members):
 * list, read, change, remove, resend the invite. Every route checks, in order: 401 (no token,
 * by the HTTP layer) → 403 `Forbidden` unless the caller administers that project
 * (`Scope.checkAdminister`) → 404 `Not found` for an unknown project → 404 `Not found` for a
 * membership that is not one of that project's → the route's own checks (400).
 */

export const CLIENT_NOT_INVITED = 'A client application cannot be invited';
export const NO_EMAIL = 'Member has no e-mail address';
/** Page size of the member list: default and most. */
const DEFAULT_COUNT = 100;
const MAX_COUNT = 1000;
const FHIR_JSON = 'application/fhir+json; charset=utf-8';

/** What the member routes need: they act for the server once the caller is checked. */
export interface MemberDeps {
  db: Database;
  system: SystemRepository;
  writer: TxWriter;
}

/** The member routes under `/admin/projects/<projectId>/members`. */
export function memberRoutes(deps: MemberDeps): AppRoute[] {
  const base = '/admin/projects/:projectId/members';
  return [
    { method: 'GET', url: base, auth: true, handler: (req) => listMembers(deps, req) },
    {
      method: 'GET',
      url: `${base}/:membershipId`,
      auth: true,
      async handler(req) {
        const { membership } = await memberOf(deps, req);
        return { status: 200, body: membership, contentType: FHIR_JSON };
      },
    },
    { method: 'POST', url: `${base}/:membershipId`, auth: true, handler: (req) => updateMember(deps, req) },
    { method: 'DELETE', url: `${base}/:membershipId`, auth: true, handler: (req) => removeMember(deps, req) },
    { method: 'POST', url: `${base}/:membershipId/resend`, auth: true, handler: (req) => resendInvite(deps, req) },
  ];
}

/** The project of the path, once the caller is known to administer it (403, then 404). */
async function projectOf(deps: MemberDeps, req: AppRequest): Promise<Project> {
  const projectId = req.params.projectId;
  req.ctx.repo.scope.checkAdminister(projectId);
  const project = await deps.system.tryRead<Project>('Project', projectId);
  if (!project) throw notFound();
  return project;
}

/** The project and the membership of the path (a membership of another project is not found). */
async function memberOf(deps: MemberDeps, req: AppRequest): Promise<{ project: Project; membership: ProjectMembership }> {
  const project = await projectOf(deps, req);
  const membership = await readRawInProject<ProjectMembership>(deps.db, 'ProjectMembership', req.params.membershipId, project.id as string);
  if (!membership) throw notFound();
  return { project, membership };
}

/** `GET …/members[?_count&_offset]` → a searchset Bundle of the project's memberships, by id. */
async function listMembers(deps: MemberDeps, req: AppRequest) {
  const project = await projectOf(deps, req);
  const count = Math.min(pageParameter(req.query._count, '_count') ?? DEFAULT_COUNT, MAX_COUNT);
  const offset = pageParameter(req.query._offset, '_offset') ?? 0;
  const page = await listRawInProject<ProjectMembership>(deps.db, 'ProjectMembership', project.id as string, { count, offset });
  const self = `${req.ctx.publicUrl}/admin/projects/${project.id}/members`;
  const link = [{ relation: 'self', url: `${self}?_count=${count}&_offset=${offset}` }];
  if (offset + count < page.total && count > 0) link.push({ relation: 'next', url: `${self}?_count=${count}&_offset=${offset + count}` });
  const bundle: Bundle<ProjectMembership> = {
    resourceType: 'Bundle',
    type: 'searchset',
    total: page.total,
    link,
    entry: page.resources.map((resource) => ({ fullUrl: `${req.ctx.fhirBaseUrl}/ProjectMembership/${resource.id}`, resource, search: { mode: 'match' } })),
  };
  return { status: 200, body: bundle, contentType: FHIR_JSON };
}

/** `_count`/`_offset`: absent, or a non-negative integer (400 otherwise). */
function pageParameter(value: string | undefined, name: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  if (!/^\d{1,9}$/.test(value)) throw badRequest(`${name} must be a non-negative integer`, name);
  return Number(value);
}

/**
 * `POST …/members/<membershipId>` with a ProjectMembership: the new content, checked
 * (admin/member-update.ts) and written in one transaction with the stored row locked, so two
 * concurrent changes are applied one after the other. A changed admin flag reaches the
 * member's tokens at their next request (docs/auth.md#revocation).
 */
async function updateMember(deps: MemberDeps, req: AppRequest) {
  const { membership: found } = await memberOf(deps, req);
  const stored = await deps.db.transaction(async (tx) => {
    const locked = await deps.writer.lock(tx, 'ProjectMembership', found.id as string);
    if (!locked || locked.resource.meta?.project !== found.meta?.project) throw notFound(); // removed (or moved) meanwhile
    const next = await updatedMembership(tx, locked.resource as ProjectMembership, req.body, req.ctx.auth.membershipId);
    return deps.writer.update(tx, next);
  });
  return { status: 200, body: stored, contentType: FHIR_JSON };
}

/**
 * `DELETE …/members/<membershipId>` → 200 `Member removed`; the member's tokens get 401 from
 * their next request on (docs/auth.md#revocation). Your own membership → 400.
 */
async function removeMember(deps: MemberDeps, req: AppRequest) {
  const { membership } = await memberOf(deps, req);
  if (membership.id === req.ctx.auth.membershipId) throw badRequest(OWN_MEMBERSHIP);
  await deps.system.delete('ProjectMembership', membership.id as string);
  return { status: 200, body: informational('Member removed'), contentType: FHIR_JSON };
}

/**
 * `POST …/members/<membershipId>/resend` → 200 `Invite sent`: the invite e-mail again
 * (docs/invite.md#e-mail), with a fresh set-password link when the user never set a password,
 * written to the outbox in one transaction.
 */
async function resendInvite(deps: MemberDeps, req: AppRequest) {
  const { project, membership } = await memberOf(deps, req);
  const userId = referenceId(membership.user?.reference, 'User');
  if (!userId) throw badRequest(CLIENT_NOT_INVITED);
  await deps.db.transaction(async (tx) => {
    const user = await readRaw<User>(tx, 'User', userId);
    if (!user?.email) throw badRequest(NO_EMAIL);
    const setPasswordUrl = user.passwordHash ? undefined : await createSetPasswordLink(tx, userId, req.ctx.publicUrl);
    const message = inviteEmail({
      to: user.email,
      projectName: project.name ?? (project.id as string),
      firstName: user.firstName ?? '',
      newUser: !user.passwordHash,
      setPasswordUrl,
      signInUrl: req.ctx.publicUrl,
    });
    await enqueueEmail(tx, message);
  });
  return { status: 200, body: informational('Invite sent'), contentType: FHIR_JSON };
}
