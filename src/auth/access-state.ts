import type { AccessPolicy } from '@medplum/fhirtypes';
import type { AuthInfo } from '../core/auth.js';
import type { Database, Queryable } from '../core/database.js';
import { announceChange, heard, subscribeChanges } from '../storage/change-feed.js';
import { readRawInProject } from '../storage/raw-resources.js';

/** NOTIFY channel on which every node hears that memberships or logins changed. */
export const ACCESS_CHANNEL = 'lattice_access';

interface MembershipState {
  exists: boolean;
  projectId?: string;
  admin?: boolean;
  /** Id of the membership's AccessPolicy (`ProjectMembership.accessPolicy`), when it has one. */
  accessPolicy?: string;
  profile?: string | null;
}

/** A policy that does not resolve (deleted, another project's): grants nothing. */
const EMPTY_POLICY: AccessPolicy = Object.freeze({ resourceType: 'AccessPolicy', resource: [] });

/**
 * What an access token's claims are checked against on every request (docs/auth.md#revocation):
 * the membership it names still exists with (at least) the rights the token claims, and the
 * login it descends from is not revoked. Both answers are cached in memory — no database read
 * per request once seen — and dropped when any node writes a change: the change's transaction
 * sends a NOTIFY on `lattice_access` (delivered at commit), which every node listens to
 * (storage/change-feed.ts).
 * A read racing an invalidation is not cached (generation check), so a stale answer never sticks.
 * The node that writes a change drops its own entries in the change's transaction as well, so
 * its next request sees the change. Another node's change may still be on its way when a
 * request arrives, so a cached answer is used only after `Database.caughtUp()` (PostgreSQL: a
 * barrier on the listening connection, shared by concurrent requests): every change committed
 * before the request has then been heard. While the listening connection is down or
 * reconnecting (`-` … `*`), nothing is cached and nothing cached is used: every check reads the
 * database (docs/auth.md#revocation).
 */
export class AccessState {
  private readonly memberships = new Map<string, MembershipState>();
  private readonly revokedLogins = new Map<string, boolean>();
  private readonly policies = new Map<string, AccessPolicy>();
  /**
   * The answer of `authorize` per verified token (the frozen AuthInfo access-token.ts keeps per
   * token string), with the generation it was computed in: used again only while no change has
   * been heard since — any membership, policy or login change, or a lost connection, makes
   * every entry stale at once. A repeated request then costs one lookup, no chain of checks.
   */
  private readonly authorized = new WeakMap<AuthInfo, { generation: number; result: AuthInfo }>();
  private generation = 0;
  /** Changes are heard (PostgreSQL: the listening connection is up): entries may be kept and used. */
  private listening = false;
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly db: Database) {}

  /** Starts listening for changes (call once). */
  async start(): Promise<void> {
    this.unsubscribe = await subscribeChanges(this.db, ACCESS_CHANNEL, (payload) => this.invalidate(payload));
    this.listening = true;
  }

  /** Stops hearing this process's changes (shutdown). */
  stop(): void {
    this.listening = false;
    this.unsubscribe?.();
  }

  /**
   * The caller a verified token stands for, with what its membership adds
   * (docs/auth.md#access-policies): undefined when the membership and login no longer grant
   * what the token claims (docs/auth.md#revocation). `since`: when the request arrived (cached
   * answers are used only once every change committed before it has been heard).
   */
  async authorize(auth: AuthInfo, since?: number): Promise<AuthInfo | undefined> {
    if (!auth.membershipId) return undefined;
    const kept = this.listening ? this.authorized.get(auth) : undefined;
    // Used once every change committed before the request has been heard, and none since it was kept.
    if (kept?.generation === this.generation && (await this.caughtUp(since)) && kept.generation === this.generation) return kept.result;
    const seen = this.generation;
    const result = await this.check(auth, auth.membershipId, since);
    if (result && seen === this.generation && this.listening) this.authorized.set(auth, { generation: seen, result });
    return result;
  }

  /** `authorize` without its kept answers: the membership, login and policy, each from its cache when it may be used. */
  private async check(auth: AuthInfo, membershipId: string, since: number | undefined): Promise<AuthInfo | undefined> {
    const cached = this.memberships.has(membershipId) || (auth.loginId !== undefined && this.revokedLogins.has(auth.loginId));
    const useCache = cached && (await this.caughtUp(since));
    const m = await this.membership(membershipId, useCache);
    if (!m.exists || m.projectId !== auth.projectId) return undefined;
    if (auth.projectAdmin && !m.admin) return undefined; // demoted: the token claims more than it has
    // Given another profile (docs/auth.md#managing-members): the token speaks for the old one.
    if (auth.profile !== undefined && m.profile !== auth.profile) return undefined;
    if (auth.loginId && (await this.loginRevoked(auth.loginId, useCache))) return undefined;
    return this.withAccessRights(auth, m, useCache);
  }

  /**
   * The caller with the membership's access policy and — for a Patient profile without a launch
   * patient — its own Patient as the patient context of `patient/` scopes and `%patient`.
   */
  private async withAccessRights(auth: AuthInfo, m: MembershipState, useCache: boolean): Promise<AuthInfo> {
    const policyId = m.accessPolicy;
    const ownPatient = auth.patient === undefined && auth.profile?.startsWith('Patient/') ? auth.profile.slice('Patient/'.length) : undefined;
    if (!policyId && !ownPatient) return auth;
    const out: AuthInfo = { ...auth };
    if (ownPatient) out.patient = ownPatient;
    if (policyId) out.accessPolicy = await this.policy(policyId, auth.projectId, useCache);
    return Object.freeze(out);
  }

  /**
   * True when cached answers may be used: every change committed before now has been heard.
   * Not listening: false (the database is read). No answer within the waiting limit: 503.
   */
  private async caughtUp(since: number | undefined): Promise<boolean> {
    return (await heard(this.db.caughtUp(since))) && this.listening;
  }

  private invalidate(payload: string): void {
    this.generation++;
    if (payload === '-' || payload === '*') {
      // Lost (`-`): nothing is heard, so nothing is kept until it is back (`*`), when
      // notifications may have been missed (src/core/database.ts).
      this.listening = payload === '*' && this.unsubscribe !== undefined;
      this.memberships.clear();
      this.revokedLogins.clear();
      this.policies.clear();
      return;
    }
    if (payload.startsWith('p:')) {
      for (const key of this.policies.keys()) if (key.endsWith(`/${payload.slice(2)}`)) this.policies.delete(key);
    } else if (payload.startsWith('m:')) this.memberships.delete(payload.slice(2));
    else this.revokedLogins.clear(); // `l:…`: logins of a user were revoked (rare): forget all
  }

  private async membership(id: string, useCache: boolean): Promise<MembershipState> {
    const cached = useCache ? this.memberships.get(id) : undefined;
    if (cached) return cached;
    const seen = this.generation;
    const row = (
      // An inactive membership (`ProjectMembership.active: false`) stands for nobody.
      await this.db.query<{ project_id: string; admin: boolean; access_policy: string | null; profile: string | null }>(
        'SELECT project_id, admin, access_policy, profile FROM auth_membership WHERE id = $1 AND active',
        [id],
      )
    ).rows[0];
    const state: MembershipState = row ? { exists: true, projectId: row.project_id, admin: row.admin, profile: row.profile } : { exists: false };
    if (row?.access_policy) state.accessPolicy = row.access_policy;
    if (seen === this.generation && this.listening) this.remember(this.memberships, id, state);
    return state;
  }

  /** The AccessPolicy `id` of `projectId`, cached until it changes; else the empty policy. */
  private async policy(id: string, projectId: string | undefined, useCache: boolean): Promise<AccessPolicy> {
    const key = `${projectId ?? ''}/${id}`;
    const cached = useCache ? this.policies.get(key) : undefined;
    if (cached) return cached;
    const seen = this.generation;
    const stored = projectId ? await readRawInProject<AccessPolicy>(this.db, 'AccessPolicy', id, projectId) : undefined;
    const policy = stored ? Object.freeze(stored) : EMPTY_POLICY;
    if (seen === this.generation && this.listening) this.remember(this.policies, key, policy);
    return policy;
  }

  private async loginRevoked(id: string, useCache: boolean): Promise<boolean> {
    const cached = useCache ? this.revokedLogins.get(id) : undefined;
    if (cached !== undefined) return cached;
    const seen = this.generation;
    const row = (await this.db.query<{ revoked: boolean }>('SELECT revoked_at IS NOT NULL AS revoked FROM auth_login WHERE id = $1', [id])).rows[0];
    const revoked = row?.revoked ?? true; // a login that does not exist (any more) grants nothing
    if (seen === this.generation && this.listening) this.remember(this.revokedLogins, id, revoked);
    return revoked;
  }

  private remember<V>(map: Map<string, V>, key: string, value: V): void {
    if (map.size >= 50_000) map.clear();
    map.set(key, value);
  }
}

/** Inside a write transaction: tell every node (at commit) that a membership changed. */
export async function notifyMembershipChanged(tx: Queryable, membershipId: string): Promise<void> {
  await announce(tx, `m:${membershipId}`);
}

/** Inside a write transaction: tell every node (at commit) that an access policy changed. */
export async function notifyPolicyChanged(tx: Queryable, policyId: string): Promise<void> {
  await announce(tx, `p:${policyId}`);
}

/**
 * Inside a transaction: revokes logins (all of a user's, or one) with their refresh tokens,
 * and tells every node at commit.
 */
export async function revokeLogins(tx: Queryable, which: { userId: string } | { loginId: string }): Promise<void> {
  const [where, value] = 'userId' in which ? ['user_id = $1', which.userId] : ['id = $1', which.loginId];
  await tx.query(`UPDATE auth_login SET revoked_at = now() WHERE ${where} AND revoked_at IS NULL`, [value]);
  await tx.query(`UPDATE auth_refresh_token SET revoked = true WHERE login_id IN (SELECT id FROM auth_login WHERE ${where})`, [value]);
  await announce(tx, `l:${value}`);
}

/** NOTIFY (every node, at commit) plus this process's caches at once. */
function announce(tx: Queryable, payload: string): Promise<void> {
  return announceChange(tx, ACCESS_CHANNEL, payload);
}
