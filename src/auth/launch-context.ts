import type { HumanName, Patient, Project, RelatedPerson } from '@medplum/fhirtypes';
import type { AuthInfo } from '../core/auth.js';
import type { Queryable } from '../core/database.js';
import type { ResourceRepository } from '../core/repository.js';
import type { MembershipRow } from './accounts.js';
import type { AuthState } from './auth-state.js';
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

/** The launch context stored under `id`, unless unknown or expired. */
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

/** A repository that sees what the member sees (its project, its rights). */
export async function memberRepository(state: AuthState, membership: MembershipRow) {
  const project = await state.env.system.tryRead<Project>('Project', membership.project_id);
  return state.repository(memberAuth(membership, project?.superAdmin === true));
}

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
export async function patientChoices(repo: ResourceRepository, membership: MembershipRow): Promise<PatientChoice[]> {
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
export async function mayChoosePatient(repo: ResourceRepository, membership: MembershipRow, patientId: string): Promise<boolean> {
  const choices = /^RelatedPerson\//.test(membership.profile ?? '') ? await patientChoices(repo, membership) : undefined;
  if (choices) return choices.some((c) => c.reference === `Patient/${patientId}`);
  const patient = /^[A-Za-z0-9\-.]{1,64}$/.test(patientId) ? await repo.tryRead<Patient>('Patient', patientId) : undefined;
  return patient?.meta?.project === membership.project_id;
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
