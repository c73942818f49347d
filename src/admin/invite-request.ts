import type { OperationOutcomeIssue, ProjectMembership, Reference } from '@medplum/fhirtypes';
import { isObject } from '../fhir/json.js';
import { MIN_PASSWORD_LENGTH } from '../auth/password.js';
import { FhirError, issue } from '../fhir/outcome.js';
import { validateResource } from '../fhir/validation/validate-resource.js';
import { normalizeEmail } from '../auth/email-address.js';

/** Resource types a user's profile may have (docs/invite.md#request). */
export const PROFILE_TYPES = ['Patient', 'Practitioner', 'RelatedPerson'] as const;
export type ProfileType = (typeof PROFILE_TYPES)[number];

/** Membership fields the invite decides itself (docs/invite.md#body-validation: not overridable). */
const PROTECTED_MEMBERSHIP_FIELDS = ['resourceType', 'id', 'meta', 'project', 'user', 'profile'] as const;

/** A validated invite body (docs/invite.md#body-validation). */
export interface InviteRequest {
  resourceType: ProfileType;
  firstName: string;
  lastName: string;
  /** Trimmed and lower-cased. */
  email?: string;
  externalId?: string;
  password?: string;
  sendEmail: boolean;
  upsert: boolean;
  /** Project-scoped: Patient, or externalId, or `scope: project`; else server-scoped. */
  projectScoped: boolean;
  /** `membership` minus the fields that cannot be overridden. */
  overrides: Partial<ProjectMembership>;
  /** `membership.profile.reference`, when the caller names the profile. */
  profileReference?: string;
  /** `patient` (RelatedPerson only). */
  patient?: Reference;
}

// Pragmatic address check: one @, no spaces, a dot in the domain.
const EMAIL = /^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/;

/**
 * Parses the body; every problem goes into one 400 OperationOutcome in the contract's order
 * (resourceType, first name, last name, email-or-externalId, email format, password), each
 * issue with `expression`. Problems the contract does not list follow them.
 */
export function parseInviteRequest(body: unknown): InviteRequest {
  const b = isObject(body) ? body : {};
  const issues: OperationOutcomeIssue[] = [];
  const resourceType = b.resourceType;
  if (!PROFILE_TYPES.includes(resourceType as ProfileType)) issues.push(issue('invalid', 'Resource type is required', 'resourceType'));
  const firstName = text(b.firstName);
  if (!firstName) issues.push(issue('invalid', 'First name is required', 'firstName'));
  const lastName = text(b.lastName);
  if (!lastName) issues.push(issue('invalid', 'Last name is required', 'lastName'));
  const emailGiven = b.email !== undefined && b.email !== null && !(typeof b.email === 'string' && b.email.trim() === '');
  const externalId = text(b.externalId);
  if (!emailGiven && !externalId) issues.push(issue('invalid', 'Either email or externalId is required', ['email', 'externalId']));
  const email = normalizeEmail(b.email);
  if (emailGiven && !(email && EMAIL.test(email))) issues.push(issue('invalid', 'Invalid email', 'email'));
  const password = b.password;
  if (password !== undefined && password !== null && (typeof password !== 'string' || password.length < MIN_PASSWORD_LENGTH)) {
    issues.push(issue('invalid', `Password must be at least ${MIN_PASSWORD_LENGTH} characters`, 'password'));
  }
  // Beyond the contract's list:
  if (b.externalId !== undefined && b.externalId !== null && typeof b.externalId !== 'string') {
    issues.push(issue('invalid', 'Invalid externalId', 'externalId'));
  }
  if (b.scope !== undefined && b.scope !== 'project' && b.scope !== 'server') issues.push(issue('invalid', 'Invalid scope', 'scope'));
  const membership = b.membership ?? {};
  if (!isObject(membership)) issues.push(issue('invalid', 'Invalid membership', 'membership'));
  const overrides = isObject(membership) ? overridesOf(membership, issues) : {};
  const profileReference = isObject(membership) ? profileReferenceOf(membership, issues) : undefined;
  if (issues.length > 0) throw new FhirError(400, issues);

  return {
    resourceType: resourceType as ProfileType,
    firstName: firstName as string,
    lastName: lastName as string,
    email,
    externalId,
    password: typeof password === 'string' ? password : undefined,
    sendEmail: b.sendEmail === true,
    upsert: b.upsert === true,
    projectScoped: resourceType === 'Patient' || externalId !== undefined || b.scope === 'project',
    overrides,
    profileReference,
    patient: isObject(b.patient) ? (b.patient) : undefined,
  };
}

/** The overridable membership fields, checked against the ProjectMembership definition. */
function overridesOf(membership: Record<string, unknown>, issues: OperationOutcomeIssue[]): Partial<ProjectMembership> {
  const overrides: Record<string, unknown> = { ...membership };
  for (const field of PROTECTED_MEMBERSHIP_FIELDS) delete overrides[field];
  // Validate a draft with placeholder references: only the overrides can be at fault.
  const draft = {
    ...overrides,
    resourceType: 'ProjectMembership',
    project: { reference: 'Project/draft' },
    user: { reference: 'User/draft' },
    profile: { reference: 'Practitioner/draft' },
  };
  for (const problem of validateResource(draft)) {
    const expression = problem.expression?.map((e) => e.replace(/^ProjectMembership\b/, 'membership'));
    issues.push(expression ? { ...problem, expression } : problem);
  }
  return overrides;
}

function profileReferenceOf(membership: Record<string, unknown>, issues: OperationOutcomeIssue[]): string | undefined {
  const profile = membership.profile;
  if (profile === undefined || profile === null) return undefined;
  const reference = isObject(profile) ? profile.reference : undefined;
  if (typeof reference !== 'string' || reference.trim() === '') {
    issues.push(issue('invalid', 'Invalid profile reference', 'membership.profile'));
    return undefined;
  }
  return reference.trim();
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

