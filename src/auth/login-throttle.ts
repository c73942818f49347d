import { randomUUID } from 'node:crypto';
import { normalizeEmail } from './email-address.js';
import type { Database } from '../core/database.js';
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
 * Login throttling shared by all API nodes: attempts are rows in `auth_login_failure`, so
 * counting them answers the same on every node. An attempt is claimed before the password is
 * even hashed — its rows are written first and counted with the others — so a burst of
 * parallel attempts gets at most the limit of password checks (docs/auth.md#throttling).
 */
export class LoginThrottle {
  constructor(private readonly db: Pick<Database, 'query' | 'transaction'>) {}

  /**
   * Claims one attempt for the account and the address; returns its id. Throws 429
   * `throttled` with `Retry-After` (and keeps nothing) when either is over its limit with this
   * attempt counted.
   */
  async claim(email: string, address: string): Promise<string> {
    const attempt = randomUUID();
    const keys = [accountKey(email), addressKey(address)];
    // Claims of one account are taken one at a time (a transaction-scoped lock on the account):
    // of a burst, exactly the first `limit` are let through, whatever order the statements of
    // parallel requests run in, and one over the limit leaves nothing (rolled back).
    return this.db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [keys[0]]);
      await tx.query('INSERT INTO auth_login_failure (key, attempt) SELECT unnest($1::text[]), $2', [keys, attempt]);
      const rows = (
        await tx.query<{ key: string; n: number; oldest: string | Date }>(
          `SELECT key, count(*)::int AS n, min(at) AS oldest FROM auth_login_failure
           WHERE key = ANY($1::text[]) AND at > now() - make_interval(secs => $2) GROUP BY key`,
          [keys, FAILURE_WINDOW_SECONDS],
        )
      ).rows;
      for (const row of rows) {
        const limit = row.key.startsWith('ip:') ? MAX_FAILURES_PER_ADDRESS : MAX_FAILURES_PER_ACCOUNT;
        if (row.n > limit) {
          // Retry when the oldest counted attempt leaves the window (at least one second).
          const oldest = new Date(row.oldest).getTime();
          const retryAfter = Math.max(1, Math.ceil((oldest + FAILURE_WINDOW_SECONDS * 1000 - Date.now()) / 1000));
          throw tooManyRequests(retryAfter, TEXT);
        }
      }
      return attempt;
    });
  }

  /** The claimed attempt failed: its rows stay and count (failures that left the window go). */
  async recordFailure(email: string, address: string): Promise<void> {
    await this.db.query(
      'DELETE FROM auth_login_failure WHERE key = ANY($1::text[]) AND at <= now() - make_interval(secs => $2)',
      [[accountKey(email), addressKey(address)], FAILURE_WINDOW_SECONDS],
    );
  }

  /** Forgets an account's failures (an operator reset its password). */
  async clearAccount(email: string): Promise<void> {
    await this.db.query('DELETE FROM auth_login_failure WHERE key = $1', [accountKey(email)]);
  }

  /** A successful login removes its own claim and clears the account's failures (not the address's). */
  async recordSuccess(email: string, attempt: string): Promise<void> {
    await this.db.query('DELETE FROM auth_login_failure WHERE key = $1 OR attempt = $2', [accountKey(email), attempt]);
  }
}

function accountKey(email: string): string {
  return `email:${normalizeEmail(email) ?? ''}`;
}

function addressKey(address: string): string {
  return `ip:${address}`;
}
