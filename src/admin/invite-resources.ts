import type { HumanName, Project, ProjectMembership, Reference, Resource, User } from '@medplum/fhirtypes';
import type { InviteRequest } from './invite-request.js';

/** The resources an invite creates, built from the request (pure functions, no I/O). */

/**
 * A new User. Project-scoped ones carry `project` and are stored in the inviting project
 * (`meta.project`): its admins read them. A server-scoped User is an account of the server,
 * stored in `serverProjectId` (the super-admin project): no project admin reads it, whether
 * this invite created it or another project's did — so the invite answer, and what its
 * `user` reference leads to, never tells a project whether the e-mail had an account
 * elsewhere (docs/invite.md#scopes).
 */
export function newUser(req: InviteRequest, project: Project, passwordHash?: string, serverProjectId?: string): User {
  const user: User = {
    resourceType: 'User',
    firstName: req.firstName,
    lastName: req.lastName,
    ...(req.email ? { email: req.email } : {}),
    ...(passwordHash ? { passwordHash } : {}),
    ...(req.projectScoped ? { project: { reference: `Project/${project.id}`, display: project.name } } : {}),
  };
  user.meta = { project: req.projectScoped ? project.id : (serverProjectId ?? project.id) };
  return user;
}

/** A new profile (Patient, Practitioner or RelatedPerson) in the project. */
export function newProfile(req: InviteRequest, projectId: string, patient?: Reference): Resource {
  const profile: Record<string, unknown> = {
    resourceType: req.resourceType,
    meta: { project: projectId },
    name: [{ given: [req.firstName], family: req.lastName }],
  };
  if (req.email) profile.telecom = [{ system: 'email', value: req.email }];
  if (patient) profile.patient = { reference: patient.reference };
  return profile as unknown as Resource;
}

/** What a membership links, with the displays the seed names. */
export interface MembershipLinks {
  project: Project;
  user: User;
  /** `<Type>/<id>` of the profile. */
  profileReference: string;
  /** The profile's full name ("First Last"). */
  profileDisplay: string | undefined;
}

/** A new ProjectMembership with the request's overrides. */
export function newMembership(req: InviteRequest, links: MembershipLinks): ProjectMembership {
  return {
    ...req.overrides,
    ...(req.externalId ? { externalId: req.externalId } : {}),
    ...references(links),
    resourceType: 'ProjectMembership',
    meta: { project: links.project.id },
  };
}

/** An existing membership updated by an `upsert` invite: overrides applied, links kept. */
export function upsertedMembership(existing: ProjectMembership, req: InviteRequest, links: MembershipLinks): ProjectMembership {
  return {
    ...existing,
    ...req.overrides,
    ...(req.externalId ? { externalId: req.externalId } : {}),
    ...references(links),
    resourceType: 'ProjectMembership',
    id: existing.id,
    meta: existing.meta,
  };
}

function references(links: MembershipLinks): Pick<ProjectMembership, 'project' | 'user' | 'profile'> {
  const { project, user } = links;
  return {
    project: withDisplay(`Project/${project.id}`, project.name),
    user: withDisplay(`User/${user.id}`, user.email),
    profile: withDisplay(links.profileReference, links.profileDisplay),
  } as Pick<ProjectMembership, 'project' | 'user' | 'profile'>;
}

/** "First Last" of a profile's first name, when it has one. */
export function displayName(profile: Resource): string | undefined {
  const names = (profile as { name?: HumanName[] }).name;
  const name = Array.isArray(names) ? names[0] : undefined;
  if (!name) return undefined;
  if (name.text?.trim()) return name.text.trim();
  const parts = [...(name.given ?? []), name.family].filter((p): p is string => typeof p === 'string' && p.trim() !== '');
  return parts.length > 0 ? parts.join(' ') : undefined;
}

function withDisplay(reference: string, display: string | undefined): Reference {
  return display ? { reference, display } : { reference };
}
