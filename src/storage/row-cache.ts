/**
 * Current resource rows kept in memory — only for PGlite, where this process is by
 * construction the only one using the database (PGlite is embedded and single-user), so every
 * write passes through here. With a PostgreSQL server other API nodes write too, and no cache
 * is used.
 *
 * Correctness: every write bumps a generation counter inside its transaction and drops the
 * entry; a reader caches what it read only if the generation did not move while it read.
 * PGlite runs a query and a transaction never at the same time, so a reader cannot see an
 * uncommitted row or store a row older than a write that finished during its read.
 */
export class RowCache<Row> {
  private readonly rows = new Map<string, Row>();
  private gen = 0;

  constructor(private readonly maxEntries = 20_000) {}

  /** The generation to pass to `set` after reading. */
  generation(): number {
    return this.gen;
  }

  get(key: string): Row | undefined {
    return this.rows.get(key);
  }

  /** Stores a row read at generation `readAt`, unless a write happened since. */
  set(key: string, row: Row, readAt: number): void {
    if (readAt !== this.gen) return;
    if (this.rows.size >= this.maxEntries) this.rows.delete(this.rows.keys().next().value as string);
    this.rows.set(key, row);
  }

  /** Called by every write of `key`, inside its transaction. */
  invalidate(key: string): void {
    this.gen++;
    this.rows.delete(key);
  }
}
