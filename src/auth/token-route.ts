import { randomUUID } from 'node:crypto';
import type { AppResult, AppRoute } from '../core/app-route.js';
import type { Queryable } from '../core/database.js';
import { membershipById, membershipsOf } from './accounts.js';
import type { AuthState } from './auth-state.js';
import { consumeRefreshToken, redeemCode, subjectFor, tokenResponse } from './grants.js';
import { verifyPkce } from './pkce.js';
import { hashSecret, safeEqual } from './secrets.js';

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
          return authorizationCode(state, params);
        case 'refresh_token':
          return refreshToken(state, params);
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

async function authorizationCode(state: AuthState, params: Record<string, string>): Promise<AppResult> {
  if (!params.code) return oauthError('invalid_request', 'Missing code');
  const db = state.env.db;
  const login = await redeemCode(db, params.code);
  if (!login || !login.membership_id) return oauthError('invalid_grant', 'Invalid or expired code');
  if (login.code_challenge && !verifyPkce(login.code_challenge, login.code_challenge_method, params.code_verifier)) {
    return oauthError('invalid_grant', 'Invalid code verifier');
  }
  if (login.client_id && params.client_id && login.client_id !== params.client_id) {
    return oauthError('invalid_grant', 'Code was issued to another client');
  }
  const membership = await membershipById(db, login.membership_id);
  const subject =
    membership &&
    (await subjectFor(state, membership, {
      loginId: login.id,
      clientId: login.client_id ?? undefined,
      scope: login.scope ?? undefined,
    }));
  if (!subject) return oauthError('invalid_grant', 'Membership no longer exists');
  return ok(await tokenResponse(state, subject, { familyId: login.id }));
}

async function refreshToken(state: AuthState, params: Record<string, string>): Promise<AppResult> {
  if (!params.refresh_token) return oauthError('invalid_request', 'Missing refresh_token');
  const db = state.env.db;
  const row = await consumeRefreshToken(db, params.refresh_token);
  if (!row) return oauthError('invalid_grant', 'Invalid refresh token');
  // Re-read the membership: a refresh picks up changes (admin flag) and fails once it is removed.
  const membership = await membershipById(db, row.membership_id);
  const subject =
    membership &&
    (await subjectFor(state, membership, {
      loginId: row.login_id ?? undefined,
      clientId: row.client_id ?? undefined,
      scope: row.scope ?? undefined,
    }));
  if (!subject) return oauthError('invalid_grant', 'Membership no longer exists');
  return ok(await tokenResponse(state, subject, { familyId: row.family_id }));
}

async function clientCredentials(state: AuthState, params: Record<string, string>, authorization: string | undefined): Promise<AppResult> {
  const basic = parseBasic(authorization);
  const clientId = basic?.id ?? params.client_id;
  const secret = basic?.secret ?? params.client_secret;
  if (!clientId || !secret) return oauthError('invalid_client', 'Missing client credentials');
  const db = state.env.db;
  // Any current secret of the client (a rotated-out or expired one is not: docs/auth.md#client-secrets).
  const stored = (
    await db.query<{ secret_hash: string }>(
      'SELECT secret_hash FROM auth_client_secret WHERE client_id = $1 AND (expires_at IS NULL OR expires_at > now())',
      [clientId],
    )
  ).rows;
  const hash = hashSecret(secret);
  const matches = stored.some((row) => safeEqual(row.secret_hash, hash));
  const memberships = matches ? await membershipsOf(db, 'ClientApplication', clientId) : [];
  const scope = params.scope || undefined;
  const loginId = memberships[0] ? await clientLogin(db, clientId, memberships[0].id, scope, state.env.config.accessTokenLifetime) : undefined;
  const subject = memberships[0] && (await subjectFor(state, memberships[0], { clientId, scope, loginId }));
  if (!subject) return oauthError('invalid_client', 'Invalid client credentials');
  // No refresh token: the client can always present its credentials again (RFC 6749 §4.4.3).
  return ok(await tokenResponse(state, subject));
}

/**
 * A login of its own for each client_credentials token (no user, no code), living as long as
 * the token: `POST /oauth2/logout` with the token revokes it like a person's login
 * (docs/auth.md#revocation), and only that token.
 */
async function clientLogin(db: Queryable, clientId: string, membershipId: string, scope: string | undefined, lifetimeSeconds: number): Promise<string> {
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

/** `Authorization: Basic base64(urlencode(id):urlencode(secret))` (RFC 6749 §2.3.1). */
function parseBasic(header: string | undefined): { id: string; secret: string } | undefined {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (!m) return undefined;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  try {
    return { id: decodeURIComponent(decoded.slice(0, colon)), secret: decodeURIComponent(decoded.slice(colon + 1)) };
  } catch {
    return { id: decoded.slice(0, colon), secret: decoded.slice(colon + 1) };
  }
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
