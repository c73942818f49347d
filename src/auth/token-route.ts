import { randomUUID } from 'node:crypto';
import type { AppResult, AppRoute } from '../core/app-route.js';
import type { Queryable } from '../core/database.js';
import { membershipById, membershipsOf, type MembershipRow } from './accounts.js';
import type { AuthState } from './auth-state.js';
import { authenticateGrantClient, clientById, presentedClient, secretMatches, type ClientFailure, type PresentedClient } from './client-auth.js';
import { grantScopes, hasScope, wantsPatient, type GrantInput } from './granted-scopes.js';
import { consumeRefreshToken, purgeExpiredLogins, redeemCode, subjectFor, tokenResponse } from './grants.js';
import { ownPatient } from './launch-context.js';
import { verifyPkce } from './pkce.js';

/** OAuth answers must not be cached (RFC 6749 §5.1). */
const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };

/** An OAuth error in the OAuth JSON form (`{error, error_description}`, status 400). */
export function oauthError(error: string, description: string): AppResult {
  return { status: 400, body: { error, error_description: description }, headers: NO_STORE };
}

/** `POST /oauth2/token`: authorization_code (+PKCE), refresh_token (rotating), client_credentials. */
export function tokenRoute(state: AuthState): AppRoute {
  return {
    method: 'POST',
    url: '/oauth2/token',
    auth: false,
    body: 'json-or-form',
    async handler(req) {
      const params = flatten(req.body);
      switch (params.grant_type) {
        case 'authorization_code':
          return authorizationCode(state, params, req.headers.authorization);
        case 'refresh_token':
          return refreshToken(state, params, req.headers.authorization);
        case 'client_credentials':
          return clientCredentials(state, params, req.headers.authorization);
        case undefined:
        case '':
          return oauthError('invalid_request', 'Missing grant_type');
        default:
          return oauthError('unsupported_grant_type', `Unsupported grant type: ${params.grant_type}`);
      }
    },
  };
}

async function authorizationCode(state: AuthState, params: Record<string, string>, authorization: string | undefined): Promise<AppResult> {
  if (!params.code) return oauthError('invalid_request', 'Missing code');
  const db = state.env.db;
  const login = await redeemCode(db, params.code);
  if (!login || !login.membership_id) return oauthError('invalid_grant', 'Invalid or expired code');
  const presented = presentedClient(params, authorization);
  // A code issued to a client is redeemed by that client only, authenticated as its type requires
  // (docs/auth.md#client-authentication); a first-party login's code (no client) needs none.
  const client = login.client_id ? await clientById(state.env.system, login.client_id) : undefined;
  if (login.client_id) {
    if (presented.id !== undefined && presented.id !== login.client_id) return oauthError('invalid_grant', 'Code was issued to another client');
    const failure = await authenticateGrantClient(db, client, presented);
    if (failure) return invalidClient(state, failure, presented);
  }
  if (login.redirect_uri !== null && params.redirect_uri !== login.redirect_uri) {
    return oauthError('invalid_grant', 'redirect_uri does not match the authorization request');
  }
  if (login.code_challenge && !verifyPkce(login.code_challenge, login.code_challenge_method, params.code_verifier)) {
    return oauthError('invalid_grant', 'Invalid code verifier');
  }
  // Without a secret, only PKCE binds the code to the app that asked (docs/auth.md#client-applications).
  if (client?.public === true && !login.code_challenge) return oauthError('invalid_grant', 'A public client must use PKCE');
  const membership = await membershipById(db, login.membership_id);
  if (!membership) return oauthError('invalid_grant', 'Membership no longer exists');
  // A Patient profile is its own launch patient (docs/auth.md#standalone-launch).
  const patient = login.patient ?? (wantsPatient(login.scope ?? undefined) ? ownPatient(membership.profile) : undefined);
  return issue(state, membership, {
    grant: {
      grantType: 'authorization_code',
      requested: login.scope ?? undefined,
      clientScope: scopeOf(client),
      memberType: membership.member_type,
      patient,
      encounter: login.encounter ?? undefined,
      launched: login.launch_project !== null,
    },
    loginId: login.id,
    clientId: login.client_id ?? undefined,
    refresh: { familyId: login.id },
    nonce: login.nonce ?? undefined,
  });
}

async function refreshToken(state: AuthState, params: Record<string, string>, authorization: string | undefined): Promise<AppResult> {
  if (!params.refresh_token) return oauthError('invalid_request', 'Missing refresh_token');
  const db = state.env.db;
  const row = await consumeRefreshToken(db, params.refresh_token);
  if (!row) return oauthError('invalid_grant', 'Invalid refresh token');
  // A refresh token issued to a confidential client is used by that client only (RFC 6749 §6).
  const client = row.client_id ? await clientById(state.env.system, row.client_id) : undefined;
  if (row.client_id) {
    const presented = presentedClient(params, authorization);
    if (presented.id !== undefined && presented.id !== row.client_id) return oauthError('invalid_grant', 'Invalid refresh token');
    const failure = await authenticateGrantClient(db, client, presented);
    if (failure) return invalidClient(state, failure, presented);
  }
  // Re-read the membership: a refresh picks up changes (admin flag) and fails once it is removed.
  const membership = await membershipById(db, row.membership_id);
  if (!membership) return oauthError('invalid_grant', 'Membership no longer exists');
  return issue(state, membership, {
    // The refresh keeps (or, with `scope`, narrows) what was granted, and its launch context.
    grant: {
      grantType: 'refresh_token',
      requested: params.scope || undefined,
      previous: row.scope ?? undefined,
      clientScope: scopeOf(client),
      memberType: membership.member_type,
      patient: row.patient ?? undefined,
      encounter: row.encounter ?? undefined,
      launched: row.launched,
    },
    loginId: row.login_id ?? undefined,
    clientId: row.client_id ?? undefined,
    refresh: { familyId: row.family_id },
  });
}

async function clientCredentials(state: AuthState, params: Record<string, string>, authorization: string | undefined): Promise<AppResult> {
  const presented = presentedClient(params, authorization);
  const clientId = presented.id;
  if (!clientId || !presented.secret) return invalidClient(state, 'Missing client credentials', presented);
  const db = state.env.db;
  const matches = await secretMatches(db, clientId, presented.secret);
  const memberships = matches ? await membershipsOf(db, 'ClientApplication', clientId) : [];
  if (!memberships[0]) return invalidClient(state, 'Invalid client credentials', presented);
  const membership = memberships[0];
  const client = await clientById(state.env.system, clientId);
  // No refresh token: the client can always present its credentials again (RFC 6749 §4.4.3).
  return issue(state, membership, {
    grant: { grantType: 'client_credentials', requested: params.scope || undefined, clientScope: scopeOf(client), memberType: 'ClientApplication' },
    clientId,
    // Each client token gets a login of its own, made once the scope is granted.
    loginFor: (scope) => clientLogin(db, clientId, membership.id, scope, state.env.config.accessTokenLifetime),
  });
}

/**
 * 401 `invalid_client` (RFC 6749 §5.2); when the client tried HTTP Basic, the answer names the
 * scheme in `WWW-Authenticate`.
 */
function invalidClient(state: AuthState, description: ClientFailure, presented: PresentedClient): AppResult {
  const headers: Record<string, string> = { ...NO_STORE };
  if (presented.basic) headers['WWW-Authenticate'] = `Basic realm="${state.env.config.publicUrl}", charset="UTF-8"`;
  return { status: 401, body: { error: 'invalid_client', error_description: description }, headers };
}

interface Issue {
  grant: GrantInput;
  loginId?: string;
  /** Makes the login the token descends from, for the granted scope (client credentials). */
  loginFor?: (scope: string | undefined) => Promise<string>;
  clientId?: string;
  refresh?: { familyId: string };
  nonce?: string;
}

/**
 * Decides the granted scope (docs/auth.md#granted-scopes) and answers with the tokens. The
 * launch context goes into the token only with a scope that asks for it: the patient with
 * `launch/patient`, `launch` or a `patient/` scope, the encounter with `launch/encounter` or `launch`.
 */
async function issue(state: AuthState, membership: MembershipRow, input: Issue): Promise<AppResult> {
  const granted = grantScopes(input.grant);
  if ('error' in granted) return oauthError('invalid_scope', granted.error);
  const scope = granted.scope || undefined;
  const launched = hasScope(scope, 'launch');
  const patient = launched || hasScope(scope, 'launch/patient') || /(^| )patient\//.test(scope ?? '') ? input.grant.patient : undefined;
  const encounter = launched || hasScope(scope, 'launch/encounter') ? input.grant.encounter : undefined;
  const loginId = input.loginId ?? (input.loginFor ? await input.loginFor(scope) : undefined);
  const subject = await subjectFor(state, membership, { loginId, clientId: input.clientId, scope, patient });
  if (!subject) {
    return input.grant.grantType === 'client_credentials'
      ? oauthError('invalid_client', 'Invalid client credentials')
      : oauthError('invalid_grant', 'Membership no longer exists');
  }
  // A refresh token only when asked for and granted (SMART `offline_access`/`online_access`).
  const refresh = hasScope(scope, 'offline_access') || hasScope(scope, 'online_access') ? input.refresh : undefined;
  return ok(await tokenResponse(state, subject, { refresh, encounter, launched, nonce: input.nonce }));
}

function scopeOf(client: { scope?: unknown } | undefined): string | undefined {
  return typeof client?.scope === 'string' ? client.scope : undefined;
}

/**
 * A login of its own for each client_credentials token (no user, no code), living as long as
 * the token: `POST /oauth2/logout` with the token revokes it like a person's login
 * (docs/auth.md#revocation), and only that token.
 */
async function clientLogin(db: Queryable, clientId: string, membershipId: string, scope: string | undefined, lifetimeSeconds: number): Promise<string> {
  await purgeExpiredLogins(db, lifetimeSeconds);
  const id = randomUUID();
  await db.query(
    `INSERT INTO auth_login (id, user_id, client_id, scope, membership_id, expires_at)
     VALUES ($1, NULL, $2, $3, $4, now() + make_interval(secs => $5))`,
    [id, clientId, scope ?? null, membershipId, lifetimeSeconds],
  );
  return id;
}

function ok(body: unknown): AppResult {
  return { status: 200, body, headers: NO_STORE };
}

/** Form or JSON body → single string values (the first of repeated ones). */
function flatten(body: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!body || typeof body !== 'object') return out;
  for (const [k, v] of Object.entries(body as Record<string, unknown>)) {
    const value: unknown = Array.isArray(v) ? (v as unknown[])[0] : v;
    if (typeof value === 'string') out[k] = value;
  }
  return out;
}
