import { normalizeEmail } from './email-address.js';
import type { Queryable } from '../core/database.js';
import { tooManyRequests } from '../fhir/outcome.js';

/** Sliding window in which failed logins count. */
export const FAILURE_WINDOW_SECONDS = 15 * 60;
/** Failures per account within the window before further attempts are refused. */
export const MAX_FAILURES_PER_ACCOUNT = 10;
/**
 * Failures per client address within the window. Higher than per account: many people may
 * share one address (NAT, proxies), and the per-account limit already stops guessing one
 * password; this one stops spraying one password over many accounts.
 */
export const MAX_FAILURES_PER_ADDRESS = 100;

const TEXT = 'Too many failed login attempts; try again later';

/**
 * Login throttling shared by all API nodes: failures are rows in `auth_login_failure`, so
 * counting them answers the same on every node. Checked before the password is even hashed.
 */
export class LoginThrottle {
  constructor(private readonly db: Queryable) {}

  /** Throws 429 `throttled` with `Retry-After` when the account or the address is over its limit. */
  async check(email: string, address: string): Promise<void> {
    const rows = (
      await this.db.query<{ key: string; n: number; oldest: string | Date }>(
        `SELECT key, count(*)::int AS n, min(at) AS oldest FROM auth_login_failure
         WHERE key = ANY($1::text[]) AND at > now() - make_interval(secs => $2) GROUP BY key`,
        [[accountKey(email), addressKey(address)], FAILURE_WINDOW_SECONDS],
      )
    ).rows;
    for (const row of rows) {
      const limit = row.key.startsWith('ip:') ? MAX_FAILURES_PER_ADDRESS : MAX_FAILURES_PER_ACCOUNT;
      if (row.n >= limit) {
        // Retry when the oldest counted failure leaves the window (at least one second).
        const oldest = new Date(row.oldest).getTime();
        const retryAfter = Math.max(1, Math.ceil((oldest + FAILURE_WINDOW_SECONDS * 1000 - Date.now()) / 1000));
        throw tooManyRequests(retryAfter, TEXT);
      }
    }
  }

  /** Records a failed attempt (and forgets failures that left the window). */
  async recordFailure(email: string, address: string): Promise<void> {
    const keys = [accountKey(email), addressKey(address)];
    await this.db.query('INSERT INTO auth_login_failure (key) SELECT unnest($1::text[])', [keys]);
    await this.db.query(
      'DELETE FROM auth_login_failure WHERE key = ANY($1::text[]) AND at <= now() - make_interval(secs => $2)',
      [keys, FAILURE_WINDOW_SECONDS],
    );
  }

  /** A successful login clears the account's failures (not the address's). */
  async recordSuccess(email: string): Promise<void> {
    await this.db.query('DELETE FROM auth_login_failure WHERE key = $1', [accountKey(email)]);
  }
}

function accountKey(email: string): string {
  return `email:${normalizeEmail(email) ?? ""}`;
}

function addressKey(address: string): string {
  return `ip:${address}`;
}
