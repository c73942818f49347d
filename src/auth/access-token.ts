import { randomUUID } from 'node:crypto';
import { SignJWT, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import type { AuthInfo } from '../core/auth.js';
import { SIGNING_ALG, type KeyStore } from './keys.js';

/** JWT header `typ` of access tokens (RFC 9068), so no other JWT is accepted as one. */
const TOKEN_TYPE = 'at+jwt';
/** Upper bound of the verified-token cache (entries); the oldest go first. */
const CACHE_LIMIT = 10_000;

/** The membership a token stands for: what the authenticator turns into `AuthInfo`. */
export interface TokenSubject {
  projectId: string;
  membershipId: string;
  /** `User` for people, `ClientApplication` for client credentials. */
  memberType: 'User' | 'ClientApplication';
  memberId: string;
  /** e.g. `Practitioner/123`. */
  profile?: string;
  projectAdmin: boolean;
  superAdmin: boolean;
  /** The password login this token descends from (absent for client credentials). */
  loginId?: string;
  /** The OAuth client the token was issued to. */
  clientId?: string;
  scope?: string;
  /** The launch context's patient id (docs/auth.md#smart-launch). */
  patient?: string;
  /** Absolute URL of the user's profile (SMART `fhirUser`). */
  fhirUser?: string;
}

/** Claims Lattice puts in an access token (beside iss, sub, iat, exp, jti). */
interface LatticeClaims extends JWTPayload {
  project: string;
  membership: string;
  profile?: string;
  /** Medplum clients look for `login_id` to recognise a Medplum-compatible server. */
  login_id?: string;
  client_id?: string;
  scope?: string;
  /** The launch context's patient id (SMART), when the token was issued with one. */
  patient?: string;
  fhirUser?: string;
  /** Member type: `User` or `ClientApplication`. */
  mtype: string;
  padm: boolean;
  sadm: boolean;
}

/**
 * Issues and verifies access tokens: ES256 JWTs signed with the database-held key.
 * Verification is cached per token string until the token expires, so a request with a
 * token seen before costs one Map lookup — no signature check, no database.
 */
export class AccessTokens {
  /**
   * Verified tokens by their signature (the JWT's last part, ~86 characters): a Map look-up
   * hashes its key, and hashing the whole ~800-character token was a visible share of a cheap
   * request. A hit counts only when the whole token is the one kept (`token`).
   */
  private readonly cache = new Map<string, { token: string; auth: AuthInfo; expiresAt: number }>();

  constructor(
    private readonly keys: KeyStore,
    /** Issuer (the public URL); read per call because tests learn their port after start. */
    private readonly issuer: () => string,
    private readonly lifetimeSeconds: () => number,
  ) {}

  /** Signs an access token for a membership; returns it with its lifetime in seconds. */
  async issue(subject: TokenSubject): Promise<{ token: string; expiresIn: number }> {
    const { kid, key } = this.keys.signingKey();
    const expiresIn = this.lifetimeSeconds();
    const claims: LatticeClaims = {
      project: subject.projectId,
      membership: subject.membershipId,
      mtype: subject.memberType,
      padm: subject.projectAdmin,
      sadm: subject.superAdmin,
    };
    if (subject.profile) claims.profile = subject.profile;
    if (subject.loginId) claims.login_id = subject.loginId;
    if (subject.clientId) claims.client_id = subject.clientId;
    if (subject.scope) claims.scope = subject.scope;
    if (subject.patient) claims.patient = subject.patient;
    if (subject.fhirUser) claims.fhirUser = subject.fhirUser;
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: SIGNING_ALG, kid, typ: TOKEN_TYPE })
      .setIssuer(this.issuer())
      .setSubject(subject.memberId)
      .setIssuedAt()
      .setExpirationTime(Math.floor(Date.now() / 1000) + expiresIn)
      .setJti(randomUUID())
      .sign(key);
    return { token, expiresIn };
  }

  /**
   * The caller a token stands for, or undefined when the token is not valid (bad signature,
   * other key, `alg: none`, expired, wrong issuer or type, malformed).
   */
  async verify(token: string): Promise<AuthInfo | undefined> {
    return (await this.verified(token))?.auth;
  }

  /** `verify`, with when the token expires (ms since the epoch). */
  async verified(token: string): Promise<{ auth: AuthInfo; expiresAt: number } | undefined> {
    const now = Date.now();
    const key = token.slice(token.lastIndexOf('.') + 1);
    const cached = this.cache.get(key);
    if (cached?.token === token) {
      if (cached.expiresAt > now) return cached;
      this.cache.delete(key);
    }
    const claims = await this.verifySignature(token);
    if (!claims) return undefined;
    const auth = toAuthInfo(claims);
    if (!auth) return undefined;
    if (this.cache.size >= CACHE_LIMIT) this.evict(now);
    const entry = { token, auth, expiresAt: (claims.exp as number) * 1000 };
    this.cache.set(key, entry);
    return entry;
  }

  private async verifySignature(token: string): Promise<LatticeClaims | undefined> {
    try {
      const { payload } = await jwtVerify<LatticeClaims>(token, (header) => this.keyFor(header.kid), {
        algorithms: [SIGNING_ALG],
        issuer: this.issuer(),
        typ: TOKEN_TYPE,
        requiredClaims: ['exp', 'sub'],
      });
      return payload;
    } catch (err) {
      if (err instanceof joseErrors.JOSEError || err instanceof TypeError || err instanceof SyntaxError) return undefined;
      throw err;
    }
  }

  private async keyFor(kid: string | undefined): Promise<CryptoKey | Uint8Array> {
    const key = await this.keys.publicKey(kid);
    if (!key) throw new joseErrors.JWKSNoMatchingKey();
    return key;
  }

  /** Drops expired entries; if the cache is still full, the oldest tenth. */
  private evict(now: number): void {
    for (const [key, entry] of this.cache) if (entry.expiresAt <= now) this.cache.delete(key);
    if (this.cache.size < CACHE_LIMIT) return;
    let drop = Math.ceil(CACHE_LIMIT / 10);
    for (const key of this.cache.keys()) {
      if (drop-- <= 0) break;
      this.cache.delete(key);
    }
  }
}

function toAuthInfo(claims: LatticeClaims): AuthInfo | undefined {
  if (typeof claims.project !== 'string' || typeof claims.membership !== 'string' || typeof claims.sub !== 'string') {
    return undefined;
  }
  const auth: AuthInfo = {
    projectId: claims.project,
    superAdmin: claims.sadm === true,
    projectAdmin: claims.padm === true,
    membershipId: claims.membership,
  };
  if (claims.mtype === 'ClientApplication') auth.clientId = claims.sub;
  else auth.userId = claims.sub;
  if (typeof claims.profile === 'string') auth.profile = claims.profile;
  if (typeof claims.login_id === 'string') auth.loginId = claims.login_id;
  // Granted scopes and launch patient: what they allow is decided in storage/scope.ts (docs/auth.md#scopes).
  if (typeof claims.scope === 'string') auth.scopes = claims.scope.split(' ').filter((s) => s.length > 0);
  if (typeof claims.patient === 'string' && claims.patient !== '') auth.patient = claims.patient;
  return Object.freeze(auth);
}
