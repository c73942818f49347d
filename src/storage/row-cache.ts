/**
 * Current resource rows kept in memory (docs/rest.md#read-cache).
 *
 * PGlite (`shared: false`): this process is by construction the only one using the database
 * (PGlite is embedded and single-user), so every write passes through here. Every write bumps
 * a generation counter inside its transaction and drops the entry; a reader caches what it
 * read only if the generation did not move while it read. PGlite runs a query and a
 * transaction never at the same time, so a reader cannot see an uncommitted row or store a
 * row older than a write that finished during its read.
 *
 * PostgreSQL (`shared: true`): other API nodes write too. Every write announces the row on
 * `lattice_rows` inside its transaction (storage/change-feed.ts): every node drops the entry
 * when PostgreSQL delivers the NOTIFY at commit; the writing node drops it at once and again
 * when its transaction has ended (a read that ran concurrently with the transaction may have
 * cached the version before it). A read stores its row only if no change at all was heard
 * while it read (the generation check), and nothing is kept until the subscription is
 * established, nor while the listening connection is lost (`-`: everything is dropped until
 * it is back, `*`). A NOTIFY arrives asynchronously, so a cached row is used only after
 * `Database.caughtUp()` (a barrier on the listening connection shared by concurrent reads;
 * repository.ts); a decision that must not act on a stale row at all (an update's no-op
 * shortcut) reads the database (`authoritative` is false).
 */
export class RowCache<Row> {
  private readonly rows = new Map<string, Row>();
  private gen = 0;
  /** False until changes are heard (PostgreSQL): nothing is stored. */
  private enabled: boolean;

  constructor(
    /** Other processes write the same database (PostgreSQL): see the class comment. */
    readonly shared = false,
    private readonly maxEntries = 20_000,
  ) {
    this.enabled = !shared;
  }

  /** True when a cached row cannot be older than the database's (PGlite). */
  get authoritative(): boolean {
    return !this.shared;
  }

  /** Changes are heard from now on (PostgreSQL): rows may be stored. */
  listening(on: boolean): void {
    this.enabled = on;
    this.clear();
  }

  /** The generation to pass to `set` after reading. */
  generation(): number {
    return this.gen;
  }

  get(key: string): Row | undefined {
    if (!this.enabled) return undefined;
    const row = this.rows.get(key);
    if (row !== undefined) {
      // Most recently used last (Map keeps insertion order).
      this.rows.delete(key);
      this.rows.set(key, row);
    }
    return row;
  }

  /** Stores a row read at generation `readAt`, unless a write happened since. */
  set(key: string, row: Row, readAt: number): void {
    if (readAt !== this.gen || !this.enabled) return;
    if (this.rows.size >= this.maxEntries) this.rows.delete(this.rows.keys().next().value as string);
    this.rows.set(key, row);
  }

  /** Called by every write of `key`, inside its transaction (and, shared, after it ended). */
  invalidate(key: string): void {
    this.gen++;
    this.rows.delete(key);
  }

  /** Drops everything (PostgreSQL: the listening connection was re-established, changes may have been missed). */
  clear(): void {
    this.gen++;
    this.rows.clear();
  }
}
