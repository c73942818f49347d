/**
 * The storage contract: one SQL dialect (PostgreSQL) behind two drivers, PGlite (embedded)
 * and `pg` (a PostgreSQL server). Nothing outside `src/storage/` knows which one runs.
 */
export interface QueryResult<T> {
  rows: T[];
  rowCount: number;
}

/** Something SQL can be sent to: the database itself or an open transaction. */
export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<QueryResult<T>>;
}

export interface Database extends Queryable {
  readonly driver: 'pglite' | 'pg';
  /**
   * Runs `fn` inside one transaction: committed when it resolves, rolled back when it throws.
   * On PostgreSQL a serialization failure or deadlock is retried a few times.
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Subscribes to NOTIFY messages on a channel (cache invalidation across API nodes). */
  listen(channel: string, handler: (payload: string) => void): Promise<void>;
  close(): Promise<void>;
  /** PGlite only: the data folder as a tarball (used to make test templates). */
  dumpDataDir?(): Promise<Blob>;
}
