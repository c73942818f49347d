import { SignJWT } from 'jose';
import { SIGNING_ALG, type KeyStore } from './keys.js';

/** What an OpenID Connect ID token states (docs/auth.md#openid-connect). */
export interface IdTokenClaims {
  issuer: string;
  /** The User id. */
  subject: string;
  /** The client the token is issued to (`client_id`). */
  audience: string;
  lifetimeSeconds: number;
  /** Absolute URL of the user's profile resource (SMART `fhirUser`). */
  fhirUser?: string;
  /** The `nonce` of the authorization request, echoed so the client can match its request. */
  nonce?: string;
}

/**
 * Signs an ID token with the server's signing key, the key that signs access tokens (its public
 * half is in /.well-known/jwks.json). Its `typ` is `JWT`, so it is never accepted as an access
 * token (those are `at+jwt`, access-token.ts).
 */
export async function signIdToken(keys: KeyStore, claims: IdTokenClaims): Promise<string> {
  const { kid, key } = keys.signingKey();
  const payload: Record<string, string> = {};
  if (claims.fhirUser) payload.fhirUser = claims.fhirUser;
  if (claims.nonce) payload.nonce = claims.nonce;
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT(payload)
    .setProtectedHeader({ alg: SIGNING_ALG, kid, typ: 'JWT' })
    .setIssuer(claims.issuer)
    .setSubject(claims.subject)
    .setAudience(claims.audience)
    .setIssuedAt(now)
    .setExpirationTime(now + claims.lifetimeSeconds)
    .sign(key);
}
