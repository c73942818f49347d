import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * High-entropy bearer secrets (authorization codes, refresh tokens, client secrets). They are
 * 256-bit random values, so a fast SHA-256 is enough to store them: unlike passwords there is
 * nothing to brute-force. Only the hash is stored, so a database dump grants no access.
 */

/** A new random secret, base64url (43 characters). */
export function randomSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** SHA-256 of a secret, hex. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** Compares two strings in constant time (for equal lengths). */
export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}
