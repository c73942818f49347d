import type { ClientApplication } from '@medplum/fhirtypes';
import type { Queryable } from '../core/database.js';
import type { ResourceRepository } from '../core/repository.js';
import { hashSecret, safeEqual } from './secrets.js';

/**
 * Client authentication at the token endpoint (RFC 6749 §2.3, docs/auth.md#client-authentication):
 * a confidential client presents its id and a current secret, in HTTP Basic
 * (`client_secret_basic`) or in the body (`client_secret_post`); a public client has no secret
 * and names itself with `client_id` (PKCE binds its codes).
 */

/** A ClientApplication with Lattice's `scope` and `public` elements. */
export type Client = ClientApplication & { scope?: unknown; public?: unknown };

/** What the token request presents about its client. */
export interface PresentedClient {
  id?: string;
  secret?: string;
  /** The credentials came in `Authorization: Basic` (a 401 then names the Basic scheme). */
  basic: boolean;
}

/** The client credentials a token request presents: HTTP Basic first, else the body. */
export function presentedClient(params: Record<string, string>, authorization: string | undefined): PresentedClient {
  const basic = parseBasic(authorization);
  if (basic) return { id: basic.id, secret: basic.secret, basic: true };
  return { id: params.client_id || undefined, secret: params.client_secret || undefined, basic: false };
}

/** True when one of the client's current secrets is `secret` (a rotated-out or expired one is not). */
export async function secretMatches(db: Queryable, clientId: string, secret: string): Promise<boolean> {
  const stored = (
    await db.query<{ secret_hash: string }>(
      'SELECT secret_hash FROM auth_client_secret WHERE client_id = $1 AND (expires_at IS NULL OR expires_at > now())',
      [clientId],
    )
  ).rows;
  const hash = hashSecret(secret);
  return stored.some((row) => safeEqual(row.secret_hash, hash));
}

/** The client application of an id, or undefined (unknown, or not an id). */
export async function clientById(system: ResourceRepository, clientId: string | null | undefined): Promise<Client | undefined> {
  if (!clientId || !/^[A-Za-z0-9\-.]{1,64}$/.test(clientId)) return undefined;
  return system.tryRead<ClientApplication>('ClientApplication', clientId);
}

/** True when `uri` is one of the client's registered redirect URIs (`redirectUri`, `redirectUris`). */
export function isRegisteredRedirect(client: ClientApplication, uri: string): boolean {
  return [client.redirectUri, ...(client.redirectUris ?? [])].some((registered) => registered !== undefined && registered === uri);
}

/** Why a grant's client did not authenticate (an `invalid_client` description). */
export type ClientFailure = 'Missing client credentials' | 'Invalid client credentials';

/**
 * Authenticates the client a code or refresh token was issued to. A confidential client must
 * present its id and a current secret; a public client may name itself (a different id fails).
 * Returns undefined when it passes, else the failure.
 */
export async function authenticateGrantClient(db: Queryable, client: Client | undefined, presented: PresentedClient): Promise<ClientFailure | undefined> {
  if (!client) return 'Invalid client credentials'; // the client the grant names is gone
  if (client.public === true) {
    if (presented.secret !== undefined || (presented.id !== undefined && presented.id !== client.id)) return 'Invalid client credentials';
    return undefined;
  }
  if (presented.secret === undefined) return 'Missing client credentials';
  if (!client.id || presented.id !== client.id || !(await secretMatches(db, client.id, presented.secret))) return 'Invalid client credentials';
  return undefined;
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
