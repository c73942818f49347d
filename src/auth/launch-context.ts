import type { HumanName, Patient, Project, RelatedPerson } from '@medplum/fhirtypes';
import type { AuthInfo } from '../core/auth.js';
import type { Queryable } from '../core/database.js';
import type { ResourceRepository } from '../core/repository.js';
import type { MembershipRow } from './accounts.js';
import { FhirError } from '../fhir/outcome.js';
import { parseResourceScope } from '../fhir/smart-scopes.js';
import type { AuthState } from './auth-state.js';
import { clientById } from './client-auth.js';
import { grantScopes } from './granted-scopes.js';
import { hashSecret, randomSecret } from './secrets.js';

/**
 * SMART launch context (docs/auth.md#smart-launch): EHR launches stored under a random id, and
 * the patients a person may choose from in a standalone `launch/patient` sign-in.
 */

/** Seconds an EHR launch id stays usable. */
export const LAUNCH_LIFETIME_SECONDS = 5 * 60;
/** Most patients the sign-in page offers to choose from. */
export const MAX_PATIENT_CHOICES = 100;

/** A stored EHR launch. */
export interface LaunchRow {
  project_id: string;
  patient: string;
  encounter: string | null;
}

/** Stores an EHR launch context and returns its id (shown once; only its hash is kept). */
export async function createLaunch(db: Queryable, row: LaunchRow & { membership_id: string }): Promise<string> {
  const id = randomSecret();
  await db.query('DELETE FROM auth_launch WHERE expires_at <= now()');
  await db.query(
    `INSERT INTO auth_launch (id_hash, project_id, membership_id, patient, encounter, expires_at)
     VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6))`,
    [hashSecret(id), row.project_id, row.membership_id, row.patient, row.encounter, LAUNCH_LIFETIME_SECONDS],
  );
  return id;
}

/**
 * Uses an EHR launch id once (docs/auth.md#ehr-launch): its context, removed in the same
 * statement, so two sign-ins cannot both bind it; undefined when unknown, expired or used.
 */
export async function consumeLaunch(db: Queryable, id: string): Promise<LaunchRow | undefined> {
  return (
    await db.query<LaunchRow>('DELETE FROM auth_launch WHERE id_hash = $1 AND expires_at > now() RETURNING project_id, patient, encounter', [hashSecret(id)])
  ).rows[0];
}

/** The launch context stored under `id`, unless unknown, expired or used. */
export async function findLaunch(db: Queryable, id: string): Promise<LaunchRow | undefined> {
  return (
    await db.query<LaunchRow>('SELECT project_id, patient, encounter FROM auth_launch WHERE id_hash = $1 AND expires_at > now()', [hashSecret(id)])
  ).rows[0];
}

/** The caller a membership stands for, as a repository sees it (to list what it may see). */
export function memberAuth(membership: MembershipRow, superAdmin: boolean): AuthInfo {
  return {
    projectId: membership.project_id,
    membershipId: membership.id,
    projectAdmin: membership.admin,
    superAdmin,
    ...(membership.member_type === 'User' ? { userId: membership.member_id } : { clientId: membership.member_id }),
    ...(membership.profile ? { profile: membership.profile } : {}),
  };
}

/**
 * A repository that reads as the token being signed in for will (docs/auth.md#standalone-launch):
 * the member with its membership's access policy — completed by the same AccessState the bearer
 * authenticator uses on every request — and the resource scopes the login would be granted
 * (`pickerScope`). So the patient picker offers exactly what the FHIR API then lets the
 * token read. Undefined when the membership no longer stands for anyone or nothing can be granted.
 */
export async function memberRepository(
  state: AuthState,
  membership: MembershipRow,
  login: { scope: string | null; clientId: string | null; launched: boolean },
): Promise<ResourceRepository | undefined> {
  const project = await state.env.system.tryRead<Project>('Project', membership.project_id);
  const caller = await state.access.authorize(memberAuth(membership, project?.superAdmin === true));
  if (!caller) return undefined;
  const client = await clientById(state.env.system, login.clientId);
  const granted = grantScopes({
    grantType: 'authorization_code',
    requested: login.scope ?? undefined,
    clientScope: typeof client?.scope === 'string' ? client.scope : undefined,
    memberType: membership.member_type,
    patient: CHOSEN_PATIENT,
    launched: login.launched,
  });
  if ('error' in granted) return undefined;
  const scopes = granted.scope.split(' ').flatMap(pickerScope);
  return state.repository(scopes.length > 0 ? { ...caller, scopes } : caller);
}

/**
 * A granted resource scope as the picker reads with it: a `user/` scope as it is; a `patient/`
 * scope lets the app read the chosen patient's compartment, which starts with that Patient — so
 * it reads Patients (`user/Patient.rs`, keeping the query of a scope on Patient itself).
 */
function pickerScope(scope: string): string[] {
  const parsed = parseResourceScope(scope);
  if (!parsed) return [];
  if (parsed.context !== 'patient') return [scope];
  const query = parsed.type === 'Patient' && parsed.query !== undefined ? `?${parsed.query}` : '';
  return [`user/Patient.rs${query}`];
}

/** A stored login (auth_login columns) as the patient picker needs it. */
export function pickerLogin(login: { scope: string | null; client_id: string | null; launch_project: string | null }) {
  return { scope: login.scope, clientId: login.client_id, launched: login.launch_project !== null };
}

/** Stands for the patient still to be chosen while the grant is worked out. */
const CHOSEN_PATIENT = 'to-be-chosen';

/** The patient a profile stands for without a choice: a Patient profile is its own patient. */
export function ownPatient(profile: string | null | undefined): string | undefined {
  const m = /^Patient\/([A-Za-z0-9\-.]{1,64})$/.exec(profile ?? '');
  return m?.[1];
}

/** A patient to choose on the sign-in page. */
export interface PatientChoice {
  reference: string;
  display: string;
}

/**
 * The patients a member may pick for a standalone launch: the patient a RelatedPerson profile
 * is linked to, else the Patient resources of its project it may see (at most
 * MAX_PATIENT_CHOICES, by name). `repo` is scoped to the member, so whatever limits what the
 * member sees limits the choice.
 */
export async function patientChoices(repo: ResourceRepository | undefined, membership: MembershipRow): Promise<PatientChoice[]> {
  if (!repo) return [];
  try {
    return await visiblePatients(repo, membership);
  } catch (err) {
    if (err instanceof FhirError && err.status === 403) return []; // the member may not read Patients
    throw err;
  }
}

async function visiblePatients(repo: ResourceRepository, membership: MembershipRow): Promise<PatientChoice[]> {
  const profile = /^RelatedPerson\/(.+)$/.exec(membership.profile ?? '');
  if (profile) {
    const related = await repo.tryRead<RelatedPerson>('RelatedPerson', profile[1]);
    const ref = related?.patient?.reference;
    const id = ref?.startsWith('Patient/') ? ref.slice('Patient/'.length) : undefined;
    const patient = id ? await repo.tryRead<Patient>('Patient', id) : undefined;
    return patient ? [choice(patient)] : [];
  }
  const found = await repo.search({ resourceType: 'Patient', params: [['_count', String(MAX_PATIENT_CHOICES)]] });
  return found.resources
    .filter((p) => p.meta?.project === membership.project_id)
    .map((p) => choice(p as Patient))
    .sort((a, b) => a.display.localeCompare(b.display));
}

/** True when the member may choose this patient (it sees it, in its project). */
export async function mayChoosePatient(repo: ResourceRepository | undefined, membership: MembershipRow, patientId: string): Promise<boolean> {
  if (!repo) return false;
  const choices = /^RelatedPerson\//.test(membership.profile ?? '') ? await patientChoices(repo, membership) : undefined;
  if (choices) return choices.some((c) => c.reference === `Patient/${patientId}`);
  if (!/^[A-Za-z0-9\-.]{1,64}$/.test(patientId)) return false;
  try {
    const patient = await repo.tryRead<Patient>('Patient', patientId);
    return patient?.meta?.project === membership.project_id;
  } catch (err) {
    if (err instanceof FhirError && err.status === 403) return false;
    throw err;
  }
}

function choice(patient: Patient): PatientChoice {
  return { reference: `Patient/${patient.id}`, display: nameOf(patient.name) ?? `Patient/${patient.id}` };
}

/** A person's name for display: `text`, else given names and family. */
export function nameOf(names: HumanName[] | undefined): string | undefined {
  const name = names?.[0];
  if (!name) return undefined;
  return name.text ?? ([...(name.given ?? []), name.family].filter(Boolean).join(' ') || undefined);
}
