import { randomUUID } from 'node:crypto';
import type { HumanName, Project, Resource, User } from '@medplum/fhirtypes';
import type { AuthInfo } from '../core/auth.js';
import { badRequest, unauthorized } from '../fhir/outcome.js';
import type { AppRoute } from '../core/app-route.js';
import { findUserIdByEmail, membershipById, membershipsOf, passwordHashOf, splitReference, type MembershipRow } from './accounts.js';
import { LOGIN_LIFETIME_SECONDS, type AuthState } from './auth-state.js';
import { revokeLogins } from './access-state.js';
import { hasScope } from './granted-scopes.js';
import { clientById, isRegisteredRedirect } from './client-auth.js';
import { attachMembership, issueCode, purgeExpiredLogins } from './grants.js';
import { consumeLaunch, findLaunch, memberRepository, pickerLogin, ownPatient, patientChoices, type PatientChoice } from './launch-context.js';
import { hashPassword, verifyPassword } from './password.js';
import { PKCE_METHODS } from './pkce.js';
import { randomSecret } from './secrets.js';

const INVALID_CREDENTIALS = 'Email or password is invalid';

/** `/auth/login`, `/auth/profile` and `/auth/me` (the Medplum-compatible login steps). */
export function loginRoutes(state: AuthState): AppRoute[] {
  return [
    { method: 'POST', url: '/auth/login', auth: false, handler: (req) => login(state, req.body, req.ip) },
    { method: 'POST', url: '/auth/profile', auth: false, handler: (req) => chooseProfile(state, req.body) },
    { method: 'GET', url: '/auth/me', auth: true, handler: async (req) => ({ status: 200, body: await me(state, req.ctx.auth) }) },
    {
      // Signs the caller out everywhere its login reaches: its access tokens stop working on
      // every node and its refresh chain is revoked (docs/auth.md#revocation).
      method: 'POST',
      url: '/oauth2/logout',
      auth: true,
      body: 'json-or-form',
      async handler(req) {
        const loginId = req.ctx.auth.loginId;
        if (loginId) await state.env.db.transaction((tx) => revokeLogins(tx, { loginId }));
        return { status: 200, body: {} };
      },
    },
  ];
}

/** A hash to verify against when the e-mail is unknown, so both failures take the same time. */
let dummyHash: Promise<string> | undefined;

async function login(state: AuthState, body: unknown, ip: string) {
  const input = objectBody(body);
  const email = stringField(input, 'email');
  const password = stringField(input, 'password');
  if (!email || password === undefined) throw badRequest(INVALID_CREDENTIALS);
  const projectId = stringField(input, 'projectId') || undefined;
  const codeChallenge = stringField(input, 'codeChallenge') || undefined;
  const method = codeChallenge ? (stringField(input, 'codeChallengeMethod') ?? 'plain') : undefined;
  if (method !== undefined && !(PKCE_METHODS as readonly string[]).includes(method)) {
    throw badRequest(`Unsupported code challenge method: ${method}`, 'codeChallengeMethod');
  }

  const db = state.env.db;
  const clientId = stringField(input, 'clientId') || null;
  const redirectUri = stringField(input, 'redirectUri') || null;
  // The redirect URI a code is issued for must be the client's (the token request repeats it).
  if (redirectUri !== null) {
    const client = await clientById(state.env.system, clientId);
    if (!client || !isRegisteredRedirect(client, redirectUri)) throw badRequest('redirect_uri is not registered for this client', 'redirectUri');
  }
  const launchId = stringField(input, 'launch') || undefined;
  let launch = launchId ? await findLaunch(db, launchId) : undefined;
  if (launchId && !launch) throw badRequest('Invalid or expired launch', 'launch');
  const attempt = await state.throttle.claim(email, ip);
  const userId = await findUserIdByEmail(db, email, projectId);
  const hash = userId ? await passwordHashOf(db, userId) : undefined;
  const valid = await verifyPassword(password, hash ?? (await (dummyHash ??= hashPassword(randomSecret(), state.env.config.passwordCost))));
  if (!valid || !userId || !hash) {
    await state.throttle.recordFailure(email, ip);
    throw badRequest(INVALID_CREDENTIALS);
  }
  await state.throttle.recordSuccess(email, attempt);

  let all = await membershipsOf(db, 'User', userId, true);
  if (projectId) all = all.filter((m) => m.project_id === projectId);
  // An EHR launch binds the login to the launch's project (docs/auth.md#ehr-launch).
  const launchProject = launch?.project_id;
  if (launchProject) all = all.filter((m) => m.project_id === launchProject);
  if (all.length === 0) {
    throw badRequest(projectId || launch ? 'User is not a member of this project' : 'User is not a member of any project');
  }
  // `ProjectMembership.active: false` signs nobody in (docs/auth.md#login).
  const memberships = all.filter((m) => m.active);
  if (memberships.length === 0) throw badRequest('Membership is not active');
  // A launch id binds one sign-in (docs/auth.md#ehr-launch): used once the password is right.
  if (launchId) {
    launch = await consumeLaunch(db, launchId);
    if (!launch) throw badRequest('Invalid or expired launch', 'launch');
  }
  await purgeExpiredLogins(db, state.env.config.accessTokenLifetime);
  const loginId = randomUUID();
  const scope = stringField(input, 'scope') || null;
  await db.query(
    `INSERT INTO auth_login (id, user_id, client_id, scope, nonce, code_challenge, code_challenge_method, expires_at, launch_project, patient, encounter, redirect_uri)
     VALUES ($1, $2, $3, $4, $5, $6, $7, now() + make_interval(secs => $8), $9, $10, $11, $12)`,
    [
      loginId,
      userId,
      clientId,
      scope,
      stringField(input, 'nonce') || null,
      codeChallenge ?? null,
      method ?? null,
      LOGIN_LIFETIME_SECONDS,
      launch?.project_id ?? null,
      launch?.patient ?? null,
      launch?.encounter ?? null,
      redirectUri,
    ],
  );
  if (memberships.length === 1) {
    return { status: 200, body: await finish(state, { id: loginId, scope, patient: launch?.patient ?? null, client_id: clientId, launch_project: launchProject ?? null }, memberships[0]) };
  }
  return { status: 200, body: { login: loginId, memberships: await describe(state, memberships) } };
}

async function chooseProfile(state: AuthState, body: unknown) {
  const input = objectBody(body);
  const loginId = stringField(input, 'login');
  const membershipId = stringField(input, 'profile');
  if (!loginId || !membershipId) throw badRequest('Missing login or profile');
  const db = state.env.db;
  const login = (
    await db.query<PendingLogin & { user_id: string }>(
      // A client's login (client_credentials) has no user: never a profile choice.
      'SELECT user_id, scope, client_id, launch_project, patient FROM auth_login WHERE id = $1 AND user_id IS NOT NULL AND code_hash IS NULL AND expires_at > now()',
      [loginId],
    )
  ).rows[0];
  if (!login) throw badRequest('Invalid login', 'login');
  const membership = await membershipById(db, membershipId);
  if (
    !membership ||
    membership.member_type !== 'User' ||
    membership.member_id !== login.user_id ||
    (login.launch_project !== null && membership.project_id !== login.launch_project)
  ) {
    throw badRequest('Invalid profile', 'profile');
  }
  return { status: 200, body: await finish(state, { ...login, id: loginId }, membership) };
}

/**
 * The last step of a login once its membership is known: its code — unless it asks for
 * `launch/patient` and has no patient yet (no EHR launch, not a Patient profile) while the
 * member may choose among several; then `{login, patients}` and the choice is made with
 * `POST /auth/patient` (docs/auth.md#standalone-launch). With one patient to choose, that one.
 */
async function finish(
  state: AuthState,
  login: PendingLogin & { id: string },
  membership: MembershipRow,
): Promise<{ login: string; code?: string; patients?: PatientChoice[] }> {
  const db = state.env.db;
  let patient: string | undefined;
  if (!login.patient && hasScope(login.scope ?? undefined, 'launch/patient') && !ownPatient(membership.profile)) {
    const choices = await patientChoices(await memberRepository(state, membership, pickerLogin(login)), membership);
    if (choices.length > 1) {
      if (!(await attachMembership(db, login.id, membership.id))) throw badRequest('Invalid login', 'login');
      return { login: login.id, patients: choices };
    }
    if (choices.length === 1) patient = choices[0].reference.slice('Patient/'.length);
  }
  const code = await issueCode(db, login.id, membership.id, patient);
  if (!code) throw badRequest('Invalid login', 'login');
  return { login: login.id, code };
}

/** What a login still choosing its membership or patient carries. */
interface PendingLogin {
  scope: string | null;
  client_id: string | null;
  launch_project: string | null;
  patient: string | null;
}

/** Memberships as `/auth/login` lists them: ids with project and profile names. */
async function describe(state: AuthState, memberships: MembershipRow[]) {
  const repo = state.env.system;
  return Promise.all(
    memberships.map(async (m) => {
      const project = await repo.tryRead<Project>('Project', m.project_id);
      const ref = splitReference(m.profile ?? undefined);
      const profile = ref ? await repo.tryRead(ref[0], ref[1]) : undefined;
      return {
        id: m.id,
        project: { reference: `Project/${m.project_id}`, display: project?.name ?? m.project_id },
        profile: { reference: m.profile ?? undefined, display: displayOf(profile) ?? m.profile ?? undefined },
      };
    }),
  );
}

/** `GET /auth/me`: the caller's session (what MedplumClient loads after a login). */
async function me(state: AuthState, auth: AuthInfo) {
  if (!auth.membershipId) throw unauthorized();
  const repo = state.env.system;
  const membership = await repo.tryRead('ProjectMembership', auth.membershipId);
  if (!membership) throw unauthorized();
  const project = auth.projectId ? await repo.tryRead('Project', auth.projectId) : undefined;
  const user = auth.userId ? await repo.tryRead<User>('User', auth.userId) : undefined;
  const ref = splitReference(auth.profile);
  const profile = (ref ? await repo.tryRead(ref[0], ref[1]) : undefined) ?? user;
  return { user, project, membership, profile, config: {} };
}

function displayOf(resource: Resource | undefined): string | undefined {
  if (!resource) return undefined;
  const r = resource as { name?: HumanName[] | string };
  if (typeof r.name === 'string') return r.name;
  const name = r.name?.[0];
  if (!name) return undefined;
  return name.text ?? [...(name.given ?? []), name.family].filter(Boolean).join(' ');
}

function objectBody(body: unknown): Record<string, unknown> {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw badRequest('Expected a JSON object');
  return body as Record<string, unknown>;
}

function stringField(body: Record<string, unknown>, name: string): string | undefined {
  const v = body[name];
  return typeof v === 'string' ? v : undefined;
}
