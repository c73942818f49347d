import type { Logger } from 'pino';
import type { Database, Queryable } from '../../../core/database.js';
import { announceChange, subscribeChanges } from '../../../storage/change-feed.js';
import { CodeSystemIndex, LAZY_PARTS, loadIndex } from './code-system-index.js';
import { INDEX_SECTION, partBytes, readSnapshot, snapshotKey, writeSnapshot, type SnapshotRead } from './index-snapshot.js';
import type { SnapshotFile } from './snapshot-file.js';
import { SnapshotUnreadable } from './snapshot-format.js';
import { warmStoredReads } from './sql-provider.js';
import type { CodeSystemInfo } from '../../types.js';

/**
 * The process's terminology caches (docs/terminology.md#in-memory-index): code-system indexes
 * (LRU within a memory budget, loaded lazily, one load shared by concurrent first uses) and the
 * rows canonical resolution reads (url → code systems / value sets, of every project; the
 * caller's visibility is applied per request).
 *
 * Never stale: every write of the terminology index announces the resource it changed on
 * `lattice_terminology` (storage/change-feed.ts) — every node hears it at commit, the writer at
 * once. Hearing it drops the resource's index and every resolution entry, and marks loads in
 * progress so their result is used once but not kept; resolution entries read while any change
 * was announced are not kept either (generation check). Until the subscription is established,
 * nothing is kept at all.
 */

/** Change-feed channel (storage/change-feed.ts) of terminology changes: `cs:<id>`, `vs:<id>`. */
export const TERMINOLOGY_CHANNEL = 'lattice_terminology';

/** Inside a write transaction: the index of CodeSystem `resourceId` changed (every node drops its copy). */
export function announceCodeSystemChange(tx: Queryable, resourceId: string): Promise<void> {
  return announceChange(tx, TERMINOLOGY_CHANNEL, `cs:${resourceId}`);
}

/** Inside a write transaction: ValueSet `resourceId` changed. */
export function announceValueSetChange(tx: Queryable, resourceId: string): Promise<void> {
  return announceChange(tx, TERMINOLOGY_CHANNEL, `vs:${resourceId}`);
}

/** Most resolution entries kept (unknown canonicals are cached too: bounded). */
const MAX_RESOLUTION_ENTRIES = 20_000;

interface Loading {
  promise: Promise<CodeSystemIndex>;
  resourceId: string;
  stale: boolean;
  /** A change of this code system was announced while it loaded. */
  changed: boolean;
}

/**
 * Indexes built from the tables with at least this many concepts are persisted for the next
 * start (smaller ones build in milliseconds); imports persist theirs whatever the size.
 */
const PERSIST_ABOVE = 10_000;

/** Reloads of an index whose code system changed while it loaded without a snapshot (PGlite). */
const MAX_RELOADS = 3;

export interface IndexCacheStats {
  indexes: number;
  bytes: number;
  budget: number;
  /** Indexes built from the tables. */
  loads: number;
  /** Indexes read from their persisted snapshot. */
  snapshotLoads: number;
  evictions: number;
}

export class TerminologyCache {
  /** Kept indexes; `used` is a recency stamp (LRU eviction takes the lowest). */
  private readonly indexes = new Map<number, { index: CodeSystemIndex; resourceId: string; used: number }>();
  private clock = 0;
  private readonly loading = new Map<number, Loading>();
  private readonly writes = new Set<Promise<unknown>>();
  private readonly resolution = new Map<string, Promise<unknown>>();
  private used = 0;
  private generation = 0;
  private listening = false;
  private unsubscribe: (() => void) | undefined;
  private loads = 0;
  private snapshotLoads = 0;
  private readonly inlineKeys = new Map<string, number>();
  private lastInlineKey = 0;
  private evictions = 0;
  /** Code systems whose index is larger than the whole budget: answered from SQL, never rebuilt for nothing. */
  private readonly oversized = new Set<number>();

  constructor(
    private readonly db: Database,
    /** Memory budget of the indexes, in bytes. */
    readonly budget: number,
    private readonly log?: Logger,
  ) {}

  /** Starts hearing changes; until then nothing is cached. */
  async start(): Promise<void> {
    this.unsubscribe = await subscribeChanges(this.db, TERMINOLOGY_CHANNEL, (payload) => this.invalidate(payload));
    this.listening = true;
  }

  stop(): void {
    this.listening = false;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.clear();
  }

  /**
   * A stamp that changes with every terminology change this node hears (any node's); undefined
   * while changes are not heard (nothing may be kept then). What was computed under one stamp
   * holds while it is current (operations/answer-cache.ts).
   */
  stamp(): number | undefined {
    return this.listening ? this.generation : undefined;
  }

  stats(): IndexCacheStats {
    return { indexes: this.indexes.size, bytes: this.used, budget: this.budget, loads: this.loads, snapshotLoads: this.snapshotLoads, evictions: this.evictions };
  }

  /** The kept index of `cs`, marked most recently used; undefined when none is kept. */
  private hit(cs: CodeSystemInfo): CodeSystemIndex | undefined {
    const hit = this.indexes.get(cs.key);
    if (!hit) return undefined;
    // A stamp, not a delete and re-insert into the Map: that churn rehashed the Map often
    // enough to be 4% of a $lookup's CPU in a profile.
    hit.used = ++this.clock;
    return hit.index;
  }

  /**
   * The index of `cs` if it is in memory now. Otherwise undefined, and its build is started in
   * the background (once; only while this node hears changes, so the result can be kept): the
   * caller answers from SQL meanwhile, so no request waits for a build
   * (docs/terminology.md#in-memory-index).
   */
  ready(cs: CodeSystemInfo): CodeSystemIndex | undefined {
    const hit = this.hit(cs);
    if (hit || !this.listening || this.loading.has(cs.key) || this.oversized.has(cs.key)) return hit;
    this.index(cs).catch((err: unknown) => this.log?.error({ err, url: cs.url, version: cs.version }, 'terminology index build failed'));
    return undefined;
  }

  /** Resolves when no index build and no snapshot write is running (tests, and a warm-up that wants them done). */
  async settled(): Promise<void> {
    while (this.loading.size > 0 || this.writes.size > 0) await Promise.allSettled([...[...this.loading.values()].map((l) => l.promise), ...this.writes]);
  }

  /** A snapshot write running in the background (index-snapshot.ts): logged when it fails, awaited by `settled`. */
  track(write: Promise<unknown>, where: { url: string; version: string | undefined }): void {
    const p = write.then(
      () => undefined,
      (err: unknown) => this.log?.warn({ ...where, err }, 'terminology index snapshot not written'),
    );
    this.writes.add(p);
    void p.finally(() => this.writes.delete(p));
  }

  /** The in-memory index of a stored code system (loaded on first use; the caller waits for it). */
  async index(cs: CodeSystemInfo): Promise<CodeSystemIndex> {
    const hit = this.hit(cs);
    if (hit) return hit;
    const pending = this.loading.get(cs.key);
    if (pending) return pending.promise;
    const loading: Loading = { promise: undefined as unknown as Promise<CodeSystemIndex>, resourceId: cs.resourceId, stale: !this.listening, changed: false };
    loading.promise = (async () => {
      try {
        const started = Date.now();
        const where = { url: cs.url, version: cs.version };
        const persisted = await this.fromSnapshot(cs);
        if (typeof persisted === 'object') {
          const { index, from, file } = persisted;
          this.snapshotLoads++;
          this.log?.info({ ...where, source: 'snapshot', from, concepts: index.maxId, mb: Math.round(index.bytes / 1e6), ms: Date.now() - started }, 'terminology index loaded');
          if (!loading.stale) this.keep(cs.key, cs.resourceId, index);
          if (file) this.readRest(cs, index, file);
          return index;
        }
        if (persisted !== undefined) this.log?.warn({ ...where, reason: persisted }, 'terminology index snapshot unusable: rebuilt from the tables');
        // Outside the request's statement limit: the first request waits for the whole build,
        // however long it takes on a loaded machine (Database.readPass). Without a snapshot
        // (PGlite), a build the code system changed under is mixed: it is read again.
        let index: CodeSystemIndex;
        for (let attempt = 1; ; attempt++) {
          loading.changed = false;
          const [built, consistent] = await this.db.readPass(async (q, consistent) => [await loadIndex(q, cs.key), consistent] as const);
          index = built;
          if (consistent || !loading.changed || attempt > MAX_RELOADS) break;
        }
        this.loads++;
        if (index.maxId >= PERSIST_ABOVE || persisted !== undefined) this.log?.info({ ...where, source: 'tables', concepts: index.maxId, mb: Math.round(index.bytes / 1e6), ms: Date.now() - started }, 'terminology index loaded');
        // Persisted for the next start (a corrupt or outdated snapshot is replaced whatever the size).
        if (!loading.changed && (index.maxId >= PERSIST_ABOVE || persisted !== undefined)) {
          const built = index;
          this.track(writeSnapshot(this.db, cs.key, INDEX_SECTION, snapshotKey(cs), built.toParts()), where);
        }
        if (!loading.stale) this.keep(cs.key, cs.resourceId, index);
        return index;
      } finally {
        this.loading.delete(cs.key);
      }
    })();
    this.loading.set(cs.key, loading);
    return loading.promise;
  }

  /**
   * The index of `cs` from its persisted snapshot; undefined when none was written, else why
   * the one written cannot be used (it is then rebuilt from the tables).
   */
  private async fromSnapshot(cs: CodeSystemInfo): Promise<{ index: CodeSystemIndex; from: string; file?: SnapshotFile } | string | undefined> {
    let read: SnapshotRead;
    try {
      read = await readSnapshot(this.db, cs.key, INDEX_SECTION, snapshotKey(cs), true);
    } catch (err) {
      return `not read: ${String(err)}`;
    }
    if ('missing' in read) return undefined;
    if ('unusable' in read) return read.unusable;
    const { file } = read;
    // The point reads that answer while the lazy parts load (index-provider.ts), made ready meanwhile.
    if (file) void warmStoredReads(this.db, cs.key).catch(() => undefined);
    try {
      // From a file copy, what every question needs is read now, the rest when first needed (readRest).
      const later = Object.values(LAZY_PARTS).flat();
      // Its all-ASCII texts (codes, displays) as their bytes: decoded in the background (readRest).
      if (file) await file.prefetch([...file.layout.entries.keys()].filter((name) => !later.includes(name)), true);
      const index = CodeSystemIndex.fromParts(read.parts, (names) => partBytes(read, names));
      if (!file) index.loadAll();
      return { index, from: read.from, file };
    } catch (err) {
      await file?.discard();
      await file?.close();
      if (err instanceof TypeError || err instanceof RangeError || err instanceof SnapshotUnreadable) return err.message;
      throw err;
    }
  }

  /**
   * Reads the parts of an index opened from a file copy that it left for later (designations,
   * ancestors), in the background; a question that needs one sooner reads it itself. A part
   * that is not what the snapshot's head says drops the index (rebuilt on next use from the
   * database's copy) and removes the file.
   */
  private readRest(cs: CodeSystemInfo, index: CodeSystemIndex, file: SnapshotFile): void {
    // The smaller groups first; a group a question read meanwhile is not read again. A
    // question that needs a group waits for its read (CodeSystemIndex.whenLoaded) instead of
    // reading it again; point reads of properties and designations answer from the database
    // meanwhile (index-provider.ts).
    let previous: Promise<void> = Promise.resolve(this.heldBackground).then(
      () => undefined,
      () => undefined,
    );
    const reads = (['properties', 'ancestors', 'designations'] as const).map((group) => {
      const read = previous.then(async () => {
        if (!index.loaded(group)) await file.prefetch(LAZY_PARTS[group], true);
        index.load(group);
      });
      index.loadingInBackground(group, read);
      previous = read;
      return read;
    });
    const job = (async () => {
      try {
        await Promise.all(reads);
        await file.close();
      } catch (err) {
        await file.discard();
        this.log?.warn({ url: cs.url, version: cs.version, reason: String(err) }, 'terminology index snapshot unusable: its file removed, the index read again on next use');
        this.drop(cs.key, index);
      }
    })();
    this.writes.add(job);
    void job.finally(() => this.writes.delete(job));
  }

  /** Background reads of persisted parts (readRest) start when this resolves (tests: a question answered while a part is not yet read). */
  private heldBackground: Promise<unknown> | undefined;

  /** Holds the background reads of indexes opened from now on until `until` resolves (tests). */
  holdBackgroundReads(until: Promise<unknown>): void {
    this.heldBackground = until;
  }

  /** Forgets the kept index of `key` if it is `index`. */
  private drop(key: number, index: CodeSystemIndex): void {
    const kept = this.indexes.get(key);
    if (kept?.index !== index) return;
    this.indexes.delete(key);
    this.used -= index.bytes;
  }

  /** Keeps an index (negative keys: request-supplied code systems, by content hash). */
  keep(key: number, resourceId: string, index: CodeSystemIndex): void {
    if (index.bytes > this.budget) this.oversized.add(key);
    if (!this.listening || index.bytes > this.budget) return;
    const old = this.indexes.get(key);
    if (old) {
      this.used -= old.index.bytes;
      this.indexes.delete(key);
    }
    while (this.used + index.bytes > this.budget && this.indexes.size > 0) {
      let oldest = 0;
      let entry: { index: CodeSystemIndex; used: number } | undefined;
      for (const [k, e] of this.indexes) if (!entry || e.used < entry.used) [oldest, entry] = [k, e];
      if (!entry) break;
      this.indexes.delete(oldest);
      this.used -= entry.index.bytes;
      this.evictions++;
    }
    this.indexes.set(key, { index, resourceId, used: ++this.clock });
    this.used += index.bytes;
  }

  /** A stable negative key for a request-supplied code system's content hash. */
  inlineKey(hash: string): number {
    let key = this.inlineKeys.get(hash);
    if (key === undefined) {
      if (this.inlineKeys.size >= MAX_RESOLUTION_ENTRIES) this.inlineKeys.clear();
      key = -++this.lastInlineKey;
      this.inlineKeys.set(hash, key);
    }
    return key;
  }

  /** A kept index by key, if any (request-supplied code systems). */
  peek(key: number): CodeSystemIndex | undefined {
    return this.indexes.get(key)?.index;
  }

  /**
   * A resolution answer (rows of the index tables) cached under `key` until the next change;
   * concurrent callers share one read.
   */
  resolve<T>(key: string, read: () => Promise<T>): Promise<T> {
    const hit = this.resolution.get(key) as Promise<T> | undefined;
    if (hit) return hit;
    const seen = this.generation;
    const p = read();
    if (!this.listening) return p;
    if (this.resolution.size >= MAX_RESOLUTION_ENTRIES) this.resolution.clear();
    this.resolution.set(key, p);
    p.then(
      () => {
        if (seen !== this.generation && this.resolution.get(key) === p) this.resolution.delete(key);
      },
      () => {
        if (this.resolution.get(key) === p) this.resolution.delete(key);
      },
    );
    return p;
  }

  /**
   * A change announced by any node: `cs:<resource id>` or `vs:<resource id>`; `-` when the
   * listening connection was lost, `*` when it was re-established (changes may have been
   * missed: forget everything).
   */
  invalidate(payload: string): void {
    // `-`: the listening connection is lost, nothing is kept until it is back (`*`).
    if (payload === '-' || payload === '*') {
      this.listening = payload === '*' && this.unsubscribe !== undefined;
      return this.clear();
    }
    this.generation++;
    this.resolution.clear();
    if (payload === '*') return this.clear(); // notifications may have been missed (src/core/database.ts)
    if (!payload.startsWith('cs:')) return;
    const resourceId = payload.slice(3);
    this.oversized.clear(); // cheap to learn again, and the changed system may fit now
    for (const [key, entry] of this.indexes) {
      if (entry.resourceId !== resourceId) continue;
      this.indexes.delete(key);
      this.used -= entry.index.bytes;
    }
    for (const l of this.loading.values()) if (l.resourceId === resourceId) l.stale = l.changed = true;
  }

  /** Forgets everything (a change may have been missed). */
  clear(): void {
    this.generation++;
    this.resolution.clear();
    this.indexes.clear();
    this.oversized.clear();
    this.used = 0;
    for (const l of this.loading.values()) l.stale = l.changed = true;
  }
}

const caches = new WeakMap<Database, TerminologyCache>();

/** The terminology cache of the application that owns `db` (created on first use). */
export function terminologyCache(db: Database, budgetBytes = 512 * 1024 * 1024, log?: Logger): TerminologyCache {
  let cache = caches.get(db);
  if (!cache) {
    cache = new TerminologyCache(db, budgetBytes, log);
    caches.set(db, cache);
  }
  return cache;
}
