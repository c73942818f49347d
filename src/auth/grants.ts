import type { Project } from '@medplum/fhirtypes';
import type { Queryable } from '../core/database.js';
import type { MembershipRow } from './accounts.js';
import type { TokenSubject } from './access-token.js';
import { CODE_LIFETIME_SECONDS, REFRESH_TOKEN_LIFETIME_SECONDS, type AuthState } from './auth-state.js';
import { hasScope } from './granted-scopes.js';
import { signIdToken } from './id-token.js';
import { hashSecret, randomSecret } from './secrets.js';

/** A login row as stored by /auth/login. */
export interface LoginRow {
  id: string;
  user_id: string;
  client_id: string | null;
  scope: string | null;
  nonce: string | null;
  code_challenge: string | null;
  code_challenge_method: string | null;
  membership_id: string | null;
  /** Project of the EHR launch bound to this login (docs/auth.md#ehr-launch). */
  launch_project: string | null;
  /** Launch context: the EHR launch's patient, or the one chosen on the sign-in page. */
  patient: string | null;
  encounter: string | null;
  /** The redirect URI the sign-in page was opened with: the token request must repeat it. */
  redirect_uri: string | null;
}

/** The body of a successful `/oauth2/token` answer (Medplum-compatible). */
export interface TokenResponse {
  token_type: 'Bearer';
  access_token: string;
  expires_in: number;
  /** The granted scope (docs/auth.md#granted-scopes); absent when nothing was granted. */
  scope?: string;
  refresh_token?: string;
  /** OpenID Connect ID token, when `openid` is granted (docs/auth.md#openid-connect). */
  id_token?: string;
  /** SMART launch context (docs/auth.md#smart-launch): patient and encounter ids. */
  patient?: string;
  encounter?: string;
  /** Absolute URL of the user's profile resource. */
  fhirUser?: string;
  project: { reference: string };
  profile: { reference: string };
}

/**
 * Attaches a membership (and the chosen launch patient, if any) and a fresh single-use
 * authorization code to a login. Returns the code, or undefined when the login already has one
 * (a login yields one code only).
 */
export async function issueCode(db: Queryable, loginId: string, membershipId: string, patient?: string): Promise<string | undefined> {
  const code = randomSecret();
  const res = await db.query(
    `UPDATE auth_login SET membership_id = $2, code_hash = $3, code_expires_at = now() + make_interval(secs => $4), patient = COALESCE($5, patient)
     WHERE id = $1 AND code_hash IS NULL AND expires_at > now() RETURNING id`,
    [loginId, membershipId, hashSecret(code), CODE_LIFETIME_SECONDS, patient ?? null],
  );
  return res.rows.length === 1 ? code : undefined;
}

/**
 * Attaches a membership to a login that still has to choose its launch patient
 * (docs/auth.md#standalone-launch); false when the login is unknown, expired or has its code.
 */
export async function attachMembership(db: Queryable, loginId: string, membershipId: string): Promise<boolean> {
  const res = await db.query('UPDATE auth_login SET membership_id = $2 WHERE id = $1 AND code_hash IS NULL AND expires_at > now() RETURNING id', [
    loginId,
    membershipId,
  ]);
  return res.rows.length === 1;
}

/**
 * Redeems an authorization code: marks it used in the same statement that finds it, so two
 * concurrent redemptions cannot both succeed. A code presented a second time revokes the
 * refresh tokens issued from it (RFC 6749 §4.1.2) and yields undefined.
 */
export async function redeemCode(db: Queryable, code: string): Promise<LoginRow | undefined> {
  const codeHash = hashSecret(code);
  const res = await db.query<LoginRow>(
    `UPDATE auth_login SET code_used_at = now()
     WHERE code_hash = $1 AND code_used_at IS NULL AND code_expires_at > now() RETURNING *`,
    [codeHash],
  );
  if (res.rows[0]) return res.rows[0];
  await db.query(
    `UPDATE auth_refresh_token SET revoked = true
     WHERE family_id IN (SELECT id FROM auth_login WHERE code_hash = $1 AND code_used_at IS NOT NULL)`,
    [codeHash],
  );
  return undefined;
}

/** A stored refresh token (by hash). */
export interface RefreshRow {
  family_id: string;
  login_id: string | null;
  membership_id: string;
  client_id: string | null;
  scope: string | null;
  patient: string | null;
  encounter: string | null;
  /** True when the grant it continues was bound to an EHR launch (keeps the `launch` scope). */
  launched: boolean;
}

/** Stores a new refresh token of a family and returns it. */
export async function issueRefreshToken(db: Queryable, row: RefreshRow): Promise<string> {
  const token = randomSecret();
  await db.query(
    `INSERT INTO auth_refresh_token (token_hash, family_id, login_id, membership_id, client_id, scope, patient, encounter, launched, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, now() + make_interval(secs => $10))`,
    [
      hashSecret(token),
      row.family_id,
      row.login_id,
      row.membership_id,
      row.client_id,
      row.scope,
      row.patient,
      row.encounter,
      row.launched,
      REFRESH_TOKEN_LIFETIME_SECONDS,
    ],
  );
  return token;
}

/**
 * Uses a refresh token once. Presenting an already used (or revoked) token is treated as
 * theft: the whole family is revoked, so neither the thief nor the victim can continue.
 */
export async function consumeRefreshToken(db: Queryable, token: string): Promise<RefreshRow | undefined> {
  const tokenHash = hashSecret(token);
  const res = await db.query<RefreshRow>(
    `UPDATE auth_refresh_token SET used_at = now()
     WHERE token_hash = $1 AND used_at IS NULL AND NOT revoked AND expires_at > now() RETURNING *`,
    [tokenHash],
  );
  if (res.rows[0]) return res.rows[0];
  await db.query(
    'UPDATE auth_refresh_token SET revoked = true WHERE family_id IN (SELECT family_id FROM auth_refresh_token WHERE token_hash = $1)',
    [tokenHash],
  );
  return undefined;
}

/** The token subject of a membership (reads the project for the super-admin flag). */
export async function subjectFor(
  state: AuthState,
  membership: MembershipRow,
  extra: { loginId?: string; clientId?: string; scope?: string; patient?: string },
): Promise<TokenSubject | undefined> {
  const project = await state.env.system.tryRead<Project>('Project', membership.project_id);
  if (!project) return undefined;
  const fhirUser = membership.member_type === 'User' && membership.profile ? `${state.env.config.publicUrl}/fhir/R4/${membership.profile}` : undefined;
  return {
    ...(fhirUser ? { fhirUser } : {}),
    projectId: membership.project_id,
    membershipId: membership.id,
    memberType: membership.member_type,
    memberId: membership.member_id,
    profile: membership.profile ?? undefined,
    projectAdmin: membership.admin,
    superAdmin: project.superAdmin === true,
    ...extra,
  };
}

/** What a token response carries beside the access token (docs/auth.md#token-endpoint). */
export interface ResponseOptions {
  /** Issue a refresh token of this family (logins only). */
  refresh?: { familyId: string };
  encounter?: string;
  /** The grant was bound to an EHR launch. */
  launched?: boolean;
  /** The authorization request's `nonce`, for the ID token. */
  nonce?: string;
}

/**
 * Signs an access token (and, for logins, a refresh token; with `openid` granted, an ID token)
 * and builds the token response.
 */
export async function tokenResponse(state: AuthState, subject: TokenSubject, options: ResponseOptions = {}): Promise<TokenResponse> {
  const { token, expiresIn } = await state.tokens.issue(subject);
  const body: TokenResponse = {
    token_type: 'Bearer',
    access_token: token,
    expires_in: expiresIn,
    project: { reference: `Project/${subject.projectId}` },
    profile: { reference: subject.profile ?? `${subject.memberType}/${subject.memberId}` },
  };
  if (subject.scope) body.scope = subject.scope;
  if (subject.patient) body.patient = subject.patient;
  if (options.encounter) body.encounter = options.encounter;
  if (subject.fhirUser) body.fhirUser = subject.fhirUser;
  if (hasScope(subject.scope, 'openid') && subject.memberType === 'User') {
    body.id_token = await signIdToken(state.keys, {
      issuer: state.env.config.publicUrl,
      subject: subject.memberId,
      // Without a client (a MedplumClient login that names none) the audience is the server itself.
      audience: subject.clientId ?? state.env.config.publicUrl,
      lifetimeSeconds: expiresIn,
      fhirUser: subject.fhirUser,
      nonce: options.nonce,
    });
  }
  if (options.refresh) {
    body.refresh_token = await issueRefreshToken(state.env.db, {
      family_id: options.refresh.familyId,
      login_id: subject.loginId ?? null,
      membership_id: subject.membershipId,
      client_id: subject.clientId ?? null,
      scope: subject.scope ?? null,
      patient: subject.patient ?? null,
      encounter: options.encounter ?? null,
      launched: options.launched === true,
    });
  }
  return body;
}

/** Most expired rows one purge removes (each login or client token purges a little). */
const PURGE_BATCH = 500;

/**
 * Removes logins nothing can use any more (docs/auth.md#login): past their lifetime and their
 * code's, longer ago than an access token lives, with no refresh token that was usable as
 * recently — and refresh tokens expired as long ago. A token of a removed login is refused
 * anyway (a login that does not exist is revoked), so only rows whose tokens have all expired
 * go. Bounded per call; called where logins are made.
 */
export async function purgeExpiredLogins(db: Queryable, accessTokenLifetime: number): Promise<void> {
  await db.query(
    `DELETE FROM auth_refresh_token WHERE token_hash IN (
       SELECT token_hash FROM auth_refresh_token WHERE expires_at < now() - make_interval(secs => $1) LIMIT ${PURGE_BATCH})`,
    [accessTokenLifetime],
  );
  await db.query(
    `DELETE FROM auth_login WHERE id IN (
       SELECT l.id FROM auth_login l
       WHERE l.expires_at < now() - make_interval(secs => $1)
         AND (l.code_expires_at IS NULL OR l.code_expires_at < now() - make_interval(secs => $1))
         AND NOT EXISTS (SELECT 1 FROM auth_refresh_token t WHERE t.login_id = l.id)
       LIMIT ${PURGE_BATCH})`,
    [accessTokenLifetime],
  );
}
