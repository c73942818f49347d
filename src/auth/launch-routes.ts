import type { Encounter, Patient, User } from '@medplum/fhirtypes';
import type { AppResult, AppRoute } from '../core/app-route.js';
import { badRequest, forbidden } from '../fhir/outcome.js';
import { membershipById, splitReference } from './accounts.js';
import type { AuthState } from './auth-state.js';
import { issueCode } from './grants.js';
import { LAUNCH_LIFETIME_SECONDS, createLaunch, mayChoosePatient, memberRepository, nameOf, pickerLogin } from './launch-context.js';

/**
 * SMART launch and OpenID Connect routes (docs/auth.md#smart-launch, #openid-connect):
 * `POST /auth/launch` (an EHR launch context), `POST /auth/patient` (the patient chosen on the
 * sign-in page) and `GET /oauth2/userinfo`.
 */
export function launchRoutes(state: AuthState): AppRoute[] {
  return [
    { method: 'POST', url: '/auth/launch', auth: true, body: 'json-or-form', handler: (req) => createEhrLaunch(state, req.ctx, req.body) },
    { method: 'POST', url: '/auth/patient', auth: false, handler: (req) => choosePatient(state, req.body) },
    { method: 'GET', url: '/oauth2/userinfo', auth: true, handler: (req) => userinfo(state, req.ctx.auth) },
  ];
}

const ID = /^[A-Za-z0-9\-.]{1,64}$/;

/** `Patient/123` or `123` → `123` (undefined for anything else). */
function idOf(value: unknown, type: string): string | undefined {
  if (typeof value !== 'string') return undefined;
  const id = value.startsWith(`${type}/`) ? value.slice(type.length + 1) : value;
  return ID.test(id) ? id : undefined;
}

/** A request value as an error text repeats it. */
function shown(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

type Ctx = Parameters<AppRoute['handler']>[0]['ctx'];

/**
 * `POST /auth/launch {patient, encounter?}` → 201 `{launch, patient, encounter?, expires_in}`:
 * what an EHR does before it opens an app with `launch=<id>`. The patient (and encounter) must
 * be visible to the caller and belong to its project; the launch is usable only in that project.
 */
async function createEhrLaunch(state: AuthState, ctx: Ctx, body: unknown) {
  const { auth, repo } = ctx;
  if (!auth.projectId || !auth.membershipId) throw forbidden();
  const input = body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
  if (input.patient === undefined || input.patient === '') throw badRequest('Missing patient', 'patient');
  const patientId = idOf(input.patient, 'Patient');
  const patient = patientId ? await repo.tryRead<Patient>('Patient', patientId) : undefined;
  if (!patient || patient.meta?.project !== auth.projectId) throw badRequest(`Unknown patient: ${shown(input.patient)}`, 'patient');
  let encounterId: string | undefined;
  if (input.encounter !== undefined && input.encounter !== '') {
    encounterId = idOf(input.encounter, 'Encounter');
    const encounter = encounterId ? await repo.tryRead<Encounter>('Encounter', encounterId) : undefined;
    if (!encounter || encounter.meta?.project !== auth.projectId) throw badRequest(`Unknown encounter: ${shown(input.encounter)}`, 'encounter');
  }
  const launch = await createLaunch(state.env.db, {
    project_id: auth.projectId,
    membership_id: auth.membershipId,
    patient: patient.id!,
    encounter: encounterId ?? null,
  });
  const answer: Record<string, unknown> = { launch, patient: patient.id, expires_in: LAUNCH_LIFETIME_SECONDS };
  if (encounterId) answer.encounter = encounterId;
  return { status: 201, body: answer, headers: { 'Cache-Control': 'no-store' } };
}

/**
 * `POST /auth/patient {login, patient}` → `{login, code}`: the patient a person picked when
 * `/auth/login` or `/auth/profile` answered `{login, patients}` (a `launch/patient` sign-in).
 */
async function choosePatient(state: AuthState, body: unknown) {
  const input = body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
  if (!input) throw badRequest('Expected a JSON object');
  const loginId = typeof input.login === 'string' ? input.login : undefined;
  if (!loginId || typeof input.patient !== 'string' || !input.patient) throw badRequest('Missing login or patient');
  const db = state.env.db;
  const login = (
    await db.query<{ membership_id: string; scope: string | null; client_id: string | null; launch_project: string | null }>(
      'SELECT membership_id, scope, client_id, launch_project FROM auth_login WHERE id = $1 AND code_hash IS NULL AND membership_id IS NOT NULL AND expires_at > now()',
      [loginId],
    )
  ).rows[0];
  const membership = login && (await membershipById(db, login.membership_id));
  if (!membership) throw badRequest('Invalid login', 'login');
  const patientId = idOf(input.patient, 'Patient');
  if (!patientId || !(await mayChoosePatient(await memberRepository(state, membership, pickerLogin(login)), membership, patientId))) {
    throw badRequest('Invalid patient', 'patient');
  }
  const code = await issueCode(db, loginId, membership.id, patientId);
  if (!code) throw badRequest('Invalid login', 'login');
  return { status: 200, body: { login: loginId, code } };
}

/**
 * `GET /oauth2/userinfo` (OpenID Connect Core §5.3): `sub`, `fhirUser`, and the name and e-mail
 * the server knows. Needs a token granted `openid` (else 403 `insufficient_scope`).
 */
async function userinfo(state: AuthState, auth: Ctx['auth']): Promise<AppResult> {
  if (!auth.userId || !auth.scopes?.includes('openid')) {
    return {
      status: 403,
      body: { error: 'insufficient_scope', error_description: 'The access token was not granted openid' },
      headers: { 'WWW-Authenticate': 'Bearer error="insufficient_scope", scope="openid"', 'Cache-Control': 'no-store' },
    };
  }
  const system = state.env.system;
  const user = await system.tryRead<User>('User', auth.userId);
  const ref = splitReference(auth.profile);
  const profile = ref ? await system.tryRead<Patient>(ref[0], ref[1]) : undefined;
  const body: Record<string, string> = { sub: auth.userId };
  if (auth.profile) body.fhirUser = `${state.env.config.publicUrl}/fhir/R4/${auth.profile}`;
  const name = nameOf(profile?.name) ?? ([user?.firstName, user?.lastName].filter(Boolean).join(' ') || undefined);
  if (name) body.name = name;
  const given = profile?.name?.[0]?.given?.join(' ') ?? user?.firstName;
  const family = profile?.name?.[0]?.family ?? user?.lastName;
  if (given) body.given_name = given;
  if (family) body.family_name = family;
  if (user?.email) body.email = user.email;
  return { status: 200, body, headers: { 'Cache-Control': 'no-store' } };
}
