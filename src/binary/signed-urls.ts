import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Queryable } from '../core/database.js';

/** Where signed content URLs point: `<public URL>/binary/<id>[/<versionId>]?Expires=…&Signature=…`. */
export const SIGNED_PATH = '/binary';

/** A parsed signed URL of this server. */
export interface SignedTarget {
  id: string;
  versionId?: string;
}

/**
 * Short-lived signed URLs of Binary content (docs/rest.md#signed-urls), as Medplum issues
 * them: an `<img src>` works without an Authorization header. The signature is an HMAC-SHA256
 * over the owning project, the Binary id, its version (when the URL names one) and the expiry,
 * with a key kept in the database (one row, made on first start), so every node signs and
 * checks alike and a signature is good for nothing but that file of that project until then.
 */
export class UrlSigner {
  private key?: Buffer;

  constructor(
    /** Read when signing: the public URL may be set after the signer is made (tests). */
    private readonly publicUrl: () => string,
    private readonly lifetimeSeconds: number,
  ) {}

  /** Loads the key, creating it when the table is empty (racing nodes: the first insert wins). */
  async open(db: Queryable): Promise<void> {
    await db.query('INSERT INTO binary_url_key (id, secret) VALUES (1, $1) ON CONFLICT (id) DO NOTHING', [randomBytes(32).toString('base64')]);
    const res = await db.query<{ secret: string }>('SELECT secret FROM binary_url_key WHERE id = 1');
    this.key = Buffer.from(res.rows[0].secret, 'base64');
  }

  /** A signed URL of a Binary's content (undefined before `open`). */
  sign(projectId: string | undefined, target: SignedTarget, now = Date.now()): string | undefined {
    if (!this.key) return undefined;
    const expires = Math.floor(now / 1000) + this.lifetimeSeconds;
    const path = `${SIGNED_PATH}/${target.id}${target.versionId ? `/${target.versionId}` : ''}`;
    return `${this.publicUrl()}${path}?Expires=${expires}&Signature=${this.signature(projectId, target, expires)}`;
  }

  /** True when `signature` was made by `sign` for this project, file and expiry, and has not expired. */
  verify(projectId: string | undefined, target: SignedTarget, expires: string | undefined, signature: string | undefined, now = Date.now()): boolean {
    if (!this.key || !expires || !signature || !/^\d{1,12}$/.test(expires) || Number(expires) * 1000 < now) return false;
    const expected = Buffer.from(this.signature(projectId, target, Number(expires)));
    const given = Buffer.from(signature);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }

  /** The Binary a signed URL of this server names (`Binary/<id>` form for storage), else undefined. */
  parse(url: string): SignedTarget | undefined {
    const prefix = `${this.publicUrl()}${SIGNED_PATH}/`;
    if (!url.startsWith(prefix)) return undefined;
    const m = /^([A-Za-z0-9\-.]{1,64})(?:\/(\d{1,10}))?\?Expires=\d+&Signature=[\w-]+$/.exec(url.slice(prefix.length));
    return m ? { id: m[1], ...(m[2] ? { versionId: m[2] } : {}) } : undefined;
  }

  private signature(projectId: string | undefined, target: SignedTarget, expires: number): string {
    return createHmac('sha256', this.key as Buffer)
      .update(`${projectId ?? ''}\n${target.id}\n${target.versionId ?? ''}\n${expires}`)
      .digest('base64url');
  }
}
