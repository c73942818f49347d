import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import type { Queryable } from '../core/database.js';

/** Signature algorithm of access tokens (ECDSA P-256: small tokens, widely supported). */
export const SIGNING_ALG = 'ES256';

/** Re-reading the key table for an unknown `kid` happens at most this often (ms). */
const RELOAD_INTERVAL_MS = 10_000;

type Key = CryptoKey | Uint8Array;

interface KeyRow {
  kid: string;
  alg: string;
  private_jwk: string;
  public_jwk: string;
  active: boolean;
}

/**
 * The JWT signing keys, kept in the database so every API node signs and verifies with the
 * same keys. The active key is generated on first start; two processes racing to create it
 * are settled by a unique index (the loser's insert does nothing and it reads the winner's).
 * Public keys are held in memory: verifying a token needs no database round trip.
 */
export class KeyStore {
  private signing!: { kid: string; key: Key };
  private readonly publicKeys = new Map<string, { key: Key; jwk: JWK }>();
  private lastReload = 0;

  private constructor(private readonly db: Queryable) {}

  /** Loads the keys, generating the first one when the table is empty. */
  static async open(db: Queryable): Promise<KeyStore> {
    const store = new KeyStore(db);
    await store.ensureActiveKey();
    await store.reload();
    return store;
  }

  /** Key id and private key to sign new tokens with. */
  signingKey(): { kid: string; key: Key } {
    return this.signing;
  }

  /**
   * The public key for a `kid`. An unknown kid may be a key another node just created, so the
   * table is re-read — at most once per RELOAD_INTERVAL_MS, so garbage kids cannot turn into a
   * database query per request.
   */
  async publicKey(kid: string | undefined): Promise<Key | undefined> {
    if (!kid) return undefined;
    const known = this.publicKeys.get(kid);
    if (known) return known.key;
    if (Date.now() - this.lastReload < RELOAD_INTERVAL_MS) return undefined;
    await this.reload();
    return this.publicKeys.get(kid)?.key;
  }

  /** Public keys as a JWK Set (`/.well-known/jwks.json`). */
  jwks(): { keys: JWK[] } {
    return { keys: [...this.publicKeys.values()].map((k) => k.jwk) };
  }

  private async ensureActiveKey(): Promise<void> {
    const existing = await this.db.query('SELECT kid FROM auth_signing_key WHERE active LIMIT 1');
    if (existing.rows.length > 0) return;
    const { publicKey, privateKey } = await generateKeyPair(SIGNING_ALG, { extractable: true });
    const kid = randomUUID();
    const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: SIGNING_ALG, use: 'sig' };
    const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: SIGNING_ALG };
    await this.db.query(
      `INSERT INTO auth_signing_key (kid, alg, private_jwk, public_jwk, active) VALUES ($1, $2, $3, $4, true)
       ON CONFLICT DO NOTHING`,
      [kid, SIGNING_ALG, JSON.stringify(privateJwk), JSON.stringify(publicJwk)],
    );
  }

  private async reload(): Promise<void> {
    this.lastReload = Date.now();
    const rows = (await this.db.query<KeyRow>('SELECT * FROM auth_signing_key ORDER BY created_at')).rows;
    for (const row of rows) {
      if (!this.publicKeys.has(row.kid)) {
        const jwk = JSON.parse(row.public_jwk) as JWK;
        this.publicKeys.set(row.kid, { jwk, key: await importJWK(jwk, row.alg) });
      }
      if (row.active && this.signing?.kid !== row.kid) {
        this.signing = { kid: row.kid, key: await importJWK(JSON.parse(row.private_jwk) as JWK, row.alg) };
      }
    }
    if (!this.signing) throw new Error('No active signing key');
  }
}
