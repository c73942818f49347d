/** Change-feed channel of Subscription changes: `<id> <1|0 active> <project> <type>`. */
export const SUBSCRIPTIONS_CHANNEL = 'lattice_subscriptions';

/** What the registry knows of one Subscription. */
export interface WatchEntry {
  id: string;
  active: boolean;
  projectId: string;
  resourceType: string;
}

export function watchPayload(e: WatchEntry): string {
  return `${e.id} ${e.active ? 1 : 0} ${e.projectId} ${e.resourceType}`;
}

/**
 * Which types, in which projects, active Subscriptions watch — so a write of a type nobody
 * watches pays nothing (its hook does not even take part, resource-hooks.ts). Kept on every
 * node from the change feed; it may answer yes too often (a rolled-back Subscription), never
 * no too early: the hook confirms in the database, in the write's transaction. While the
 * listening connection is down or was never up, it answers yes for everything.
 */
export class SubscriptionRegistry {
  private readonly byKey = new Map<string, Set<string>>();
  /** Keys an id is counted under (more than one only while an own write is uncommitted). */
  private readonly keysOf = new Map<string, string[]>();
  private readonly perType = new Map<string, number>();
  private listening = false;

  /** May an active Subscription watch writes of `resourceType` (in any project)? */
  watches(resourceType: string): boolean {
    return !this.listening || (this.perType.get(resourceType) ?? 0) > 0;
  }

  /** May an active Subscription of `projectId` watch `resourceType`? */
  watchesIn(projectId: string, resourceType: string): boolean {
    return !this.listening || (this.byKey.get(`${projectId}/${resourceType}`)?.size ?? 0) > 0;
  }

  /** True when no active Subscription exists (as far as this node has heard, and it is listening). */
  empty(): boolean {
    return this.listening && this.keysOf.size === 0;
  }

  /** Replaces everything with the active subscriptions read from the database, and trusts itself again. */
  load(entries: WatchEntry[]): void {
    this.byKey.clear();
    this.keysOf.clear();
    this.perType.clear();
    for (const e of entries) this.apply(e);
    this.listening = true;
  }

  /** The listening connection was lost: answer yes until `load` runs again. */
  lost(): void {
    this.listening = false;
  }

  /** A heard change (a payload of SUBSCRIPTIONS_CHANNEL, or this node's own write). */
  hear(payload: string): void {
    const [id, active, projectId, resourceType] = payload.split(' ');
    if (!id || !projectId || !resourceType) return;
    this.apply({ id, active: active === '1', projectId, resourceType });
  }

  /**
   * Adds without removing anything: this node's own write, before it commits (what it replaces
   * is removed when the commit is heard). A superset is safe; a removal that rolls back is not.
   */
  add(e: WatchEntry): void {
    if (e.active) this.count(e.id, `${e.projectId}/${e.resourceType}`);
  }

  private apply(e: WatchEntry): void {
    for (const key of this.keysOf.get(e.id) ?? []) {
      this.byKey.get(key)?.delete(e.id);
      const type = key.slice(key.indexOf('/') + 1);
      this.perType.set(type, (this.perType.get(type) ?? 1) - 1);
    }
    this.keysOf.delete(e.id);
    if (e.active) this.count(e.id, `${e.projectId}/${e.resourceType}`);
  }

  private count(id: string, key: string): void {
    const keys = this.keysOf.get(id) ?? [];
    if (keys.includes(key)) return;
    keys.push(key);
    this.keysOf.set(id, keys);
    let ids = this.byKey.get(key);
    if (!ids) this.byKey.set(key, (ids = new Set()));
    ids.add(id);
    const type = key.slice(key.indexOf('/') + 1);
    this.perType.set(type, (this.perType.get(type) ?? 0) + 1);
  }
}
