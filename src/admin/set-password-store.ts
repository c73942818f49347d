import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { User } from '@medplum/fhirtypes';
import { MIN_PASSWORD_LENGTH, hashPassword } from '../auth/password.js';
import { badRequest, notFound } from '../fhir/outcome.js';
import type { Database, Queryable } from '../core/database.js';
import type { TxWriter } from './tx-writer.js';

/** How long a set-password link stays valid (docs/invite.md#set-password-api). */
export const SET_PASSWORD_LIFETIME_DAYS = 7;

/**
 * Creates a single-use set-password request for a user inside the caller's transaction and
 * returns its link `<publicUrl>/setpassword/<id>/<secret>`. Only a SHA-256 of the secret is
 * stored (it is 256 random bits, so a fast hash is enough; no salt or stretching needed).
 */
export async function createSetPasswordLink(tx: Queryable, userId: string, publicUrl: string): Promise<string> {
  const id = randomUUID();
  const secret = randomBytes(32).toString('base64url');
  await tx.query(
    `INSERT INTO password_set_request (id, user_id, secret_hash, expires_at)
     VALUES ($1, $2, $3, now() + make_interval(days => $4::int))`,
    [id, userId, sha256(secret), SET_PASSWORD_LIFETIME_DAYS],
  );
  return `${publicUrl}/setpassword/${id}/${secret}`;
}

/** What a link is worth right now. */
export type LinkState =
  | { state: 'valid'; userId: string }
  | { state: 'unknown' | 'invalid-secret' | 'used' | 'expired' };

/**
 * Checks a link: unknown id, then the secret (before anything about the link's state is
 * revealed), then single use, then expiry.
 */
export async function checkSetPasswordLink(q: Queryable, id: unknown, secret: unknown): Promise<LinkState> {
  if (typeof id !== 'string' || id === '') return { state: 'unknown' };
  const res = await q.query<{ user_id: string; secret_hash: string; used: boolean; expired: boolean }>(
    `SELECT user_id, secret_hash, used_at IS NOT NULL AS used, expires_at <= now() AS expired
     FROM password_set_request WHERE id = $1`,
    [id],
  );
  const row = res.rows[0];
  if (!row) return { state: 'unknown' };
  if (typeof secret !== 'string' || !sameHash(sha256(secret), row.secret_hash)) return { state: 'invalid-secret' };
  if (row.used) return { state: 'used' };
  if (row.expired) return { state: 'expired' };
  return { state: 'valid', userId: row.user_id };
}

/**
 * `POST /auth/setpassword {id, secret, password}`: sets the user's password once.
 * Errors (contract texts): 404 unknown link, 400 `Invalid secret`, `Already used`, `Expired`,
 * `Password must be at least 8 characters`.
 */
export async function setPasswordWithLink(
  db: Database,
  writer: TxWriter,
  input: { id?: unknown; secret?: unknown; password?: unknown },
  passwordCost: number,
): Promise<void> {
  const link = await checkSetPasswordLink(db, input.id, input.secret);
  if (link.state !== 'valid') throw linkError(link.state);
  const password = input.password;
  if (typeof password !== 'string' || password.length < MIN_PASSWORD_LENGTH) {
    throw badRequest(`Password must be at least ${MIN_PASSWORD_LENGTH} characters`, 'password');
  }
  const passwordHash = await hashPassword(password, passwordCost); // slow (scrypt): outside the transaction
  await db.transaction(async (tx) => {
    // The conditional UPDATE is the single-use guarantee: of two concurrent submissions one
    // marks the link used, the other updates nothing.
    const claimed = await tx.query(
      `UPDATE password_set_request SET used_at = now()
       WHERE id = $1 AND used_at IS NULL AND expires_at > now() RETURNING user_id`,
      [input.id],
    );
    if (claimed.rows.length === 0) throw badRequest('Already used');
    const current = await writer.lock(tx, 'User', link.userId);
    if (!current) throw notFound();
    // Following the link proves the address: the e-mail counts as verified from now on.
    const user = current.resource as User;
    await writer.update(tx, { ...user, passwordHash, ...(user.email ? { emailVerified: true } : {}) });
  });
}

/** The contract's error for a link that is not valid. */
export function linkError(state: Exclude<LinkState['state'], 'valid'>): Error {
  switch (state) {
    case 'unknown':
      return notFound();
    case 'invalid-secret':
      return badRequest('Invalid secret');
    case 'used':
      return badRequest('Already used');
    case 'expired':
      return badRequest('Expired');
  }
}

function sha256(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
