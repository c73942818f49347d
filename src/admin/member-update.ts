import type { OperationOutcomeIssue, ProjectMembership, Reference, Resource } from '@medplum/fhirtypes';
import { splitReference } from '../auth/accounts.js';
import type { Queryable } from '../core/database.js';
import { isObject } from '../fhir/json.js';
import { FhirError, badRequest, issue } from '../fhir/outcome.js';
import { validateResource } from '../fhir/validation/validate-resource.js';
import { readRawInProject } from '../storage/raw-resources.js';
import { PROFILE_TYPES } from './invite-request.js';
import { displayName } from './invite-resources.js';

/**
 * The new content of a membership changed by a project admin
 * (`POST /admin/projects/<projectId>/members/<membershipId>`, docs/auth.md#managing-members):
 * the body replaces the membership, as Medplum's route does, but its links are the server's —
 * `project` and `user` cannot change, `profile` must be a profile of the same project, and
 * `accessPolicy` an AccessPolicy of the same project. Texts are the contract's.
 */

export const NOT_A_MEMBERSHIP = 'Expected a ProjectMembership resource';
export const ID_MISMATCH = 'Resource ID does not match URL';
export const OTHER_PROJECT = 'A membership cannot move to another project';
export const OTHER_USER = "A membership's user cannot be changed";
export const INVALID_PROFILE = 'Invalid profile reference';
export const PROFILE_TYPE = 'Profile must be a Patient, Practitioner or RelatedPerson';
export const CLIENT_PROFILE = "A client application's profile is the client application itself";
export const PROFILE_NOT_IN_PROJECT = 'Profile does not belong to project';
export const INVALID_POLICY = 'Invalid access policy reference';
export const POLICY_NOT_IN_PROJECT = 'Access policy does not belong to project';
export const OWN_ADMIN = 'Cannot remove your own admin rights';

/** Fields the server keeps from the stored membership whatever the body says. */
const SERVER_FIELDS = ['meta', 'project', 'user'] as const;

/**
 * Checks `body` against the stored membership (inside the caller's transaction, `tx`) and
 * returns the membership to store. `callerMembershipId`: the membership the caller's token
 * stands for (it may not drop its own admin flag).
 */
export async function updatedMembership(
  tx: Queryable,
  stored: ProjectMembership,
  body: unknown,
  callerMembershipId: string | undefined,
): Promise<ProjectMembership> {
  const projectId = splitReference(stored.project?.reference)?.[1] as string;
  if (!isObject(body) || body.resourceType !== 'ProjectMembership') throw badRequest(NOT_A_MEMBERSHIP, 'resourceType');
  if (body.id !== undefined && body.id !== stored.id) throw badRequest(ID_MISMATCH, 'ProjectMembership.id');
  if (body.project !== undefined && referenceOf(body.project) !== `Project/${projectId}`) throw badRequest(OTHER_PROJECT, 'ProjectMembership.project');
  if (body.user !== undefined && referenceOf(body.user) !== stored.user?.reference) throw badRequest(OTHER_USER, 'ProjectMembership.user');
  if (callerMembershipId === stored.id && stored.admin === true && body.admin !== true) throw badRequest(OWN_ADMIN, 'ProjectMembership.admin');

  // The shape first (unknown elements, types, cardinality), with the server's links in place.
  const candidate = { ...body, id: stored.id } as Record<string, unknown>;
  for (const field of SERVER_FIELDS) candidate[field] = stored[field];
  candidate.profile = body.profile ?? stored.profile;
  const problems = validateResource(candidate).filter((p) => p.severity === 'error' || p.severity === 'fatal');
  if (problems.length > 0) throw new FhirError(400, problems);

  const membership = candidate as unknown as ProjectMembership;
  membership.profile = (await checkedProfile(tx, stored, projectId, membership.profile)) as ProjectMembership['profile'];
  const issues: OperationOutcomeIssue[] = [];
  if (membership.accessPolicy !== undefined) await checkPolicy(tx, projectId, membership.accessPolicy, 'ProjectMembership.accessPolicy', issues);
  for (const [i, access] of (membership.access ?? []).entries()) {
    await checkPolicy(tx, projectId, access.policy, `ProjectMembership.access[${i}].policy`, issues);
  }
  if (issues.length > 0) throw new FhirError(400, issues);
  return membership;
}

/** A profile of the same project: a person's for a user, the client itself for a client application. */
async function checkedProfile(tx: Queryable, stored: ProjectMembership, projectId: string, profile: Reference): Promise<Reference> {
  const expression = 'ProjectMembership.profile';
  const parts = splitReference(profile.reference);
  if (!parts) throw badRequest(INVALID_PROFILE, expression);
  const member = splitReference(stored.user?.reference);
  if (member?.[0] === 'ClientApplication') {
    if (profile.reference !== stored.user?.reference) throw badRequest(CLIENT_PROFILE, expression);
  } else if (!(PROFILE_TYPES as readonly string[]).includes(parts[0])) {
    throw badRequest(PROFILE_TYPE, expression);
  }
  if (profile.reference === stored.profile?.reference) return { ...profile, display: profile.display ?? stored.profile?.display };
  const resource = await readRawInProject<Resource>(tx, parts[0], parts[1], projectId);
  if (!resource) throw badRequest(PROFILE_NOT_IN_PROJECT, expression);
  const display = displayName(resource) ?? (resource as { name?: unknown }).name;
  return typeof display === 'string' ? { reference: profile.reference, display } : { reference: profile.reference };
}

/** `AccessPolicy/<id>` of a live AccessPolicy stored in the same project. */
async function checkPolicy(tx: Queryable, projectId: string, policy: Reference | undefined, expression: string, issues: OperationOutcomeIssue[]): Promise<void> {
  const parts = splitReference(policy?.reference);
  if (!parts || parts[0] !== 'AccessPolicy') {
    issues.push(issue('invalid', INVALID_POLICY, expression));
    return;
  }
  if (!(await readRawInProject(tx, 'AccessPolicy', parts[1], projectId))) issues.push(issue('invalid', POLICY_NOT_IN_PROJECT, expression));
}

function referenceOf(value: unknown): string | undefined {
  return isObject(value) && typeof value.reference === 'string' ? value.reference : undefined;
}
