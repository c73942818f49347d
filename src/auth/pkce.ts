import { createHash } from 'node:crypto';
import { safeEqual } from './secrets.js';

/** PKCE methods accepted at login (RFC 7636). `plain` is accepted; discovery advertises S256. */
export const PKCE_METHODS = ['S256', 'plain'] as const;
export type PkceMethod = (typeof PKCE_METHODS)[number];

/** RFC 7636 §4.1: 43–128 characters of [A-Z a-z 0-9 - . _ ~]. */
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;

/** The S256 challenge of a verifier: BASE64URL(SHA256(verifier)). */
export function s256Challenge(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

/** True when `verifier` answers the challenge recorded at login. */
export function verifyPkce(challenge: string, method: string | null | undefined, verifier: string | undefined): boolean {
  if (!verifier || !VERIFIER.test(verifier)) return false;
  const expected = (method ?? 'plain') === 'S256' ? s256Challenge(verifier) : verifier;
  return safeEqual(expected, challenge);
}
