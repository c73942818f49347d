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
  /**
   * Bulk load: `COPY table (columns) FROM` rows in PostgreSQL's text format (columns separated
   * by tabs, `\N` for NULL, backslash escapes, one row per line — see bulk-insert.ts). Several
   * times cheaper than parameters for large batches (docs/terminology.md#cli-import). Both
   * drivers provide it (PGlite through its `/dev/blob` device, `pg` with COPY FROM STDIN);
   * callers fall back to INSERT for a Queryable without it.
   */
  copyRows?(table: string, columns: string[], text: string): Promise<void>;
  /**
   * An open transaction (PostgreSQL): `fn` runs once it has ended, committed or rolled back,
   * before its caller continues (the read cache drops what a concurrent read may have kept).
   */
  afterEnd?(fn: () => void): void;
}

/**
 * What `/healthz` reports about the database (docs/errors.md#health-check), found without
 * queueing behind user work: `ok` (it answered), `busy` (PGlite only: a request holds the
 * embedded database, within its time limit), `unavailable` (no answer, or held past its limit).
 */
export interface DatabaseHealth {
  driver: 'pglite' | 'pg';
  state: 'ok' | 'busy' | 'unavailable';
}

/**
 * How long one request may use the database (docs/errors.md#database-limits); 0 = no limit
 * (the command-line import).
 */
export interface DatabaseLimits {
  /** One statement, and one transaction from its first statement to its commit (ms). */
  statementTimeoutMs: number;
  /** Waiting for a connection (PostgreSQL) or for the embedded database's turn (PGlite) (ms). */
  acquireTimeoutMs: number;
}

export interface Database extends Queryable {
  readonly driver: 'pglite' | 'pg';
  /** The database's state, within about a second, never queued behind user work. */
  health(): Promise<DatabaseHealth>;
  /**
   * Runs `fn` inside one transaction: committed when it resolves, rolled back when it throws.
   * On PostgreSQL a serialization failure or deadlock is retried a few times. `timeoutMs`
   * replaces the transaction deadline of the limits (a transaction Bundle's is longer,
   * docs/rest.md#batch-and-transaction); each statement keeps the statement timeout.
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>, options?: { timeoutMs?: number }): Promise<T>;
  /**
   * A long read-only pass (building an in-memory index from many chunked statements), outside
   * a request's limits: no statement timeout and no transaction deadline, as it may take longer
   * than one request may hold the database while the request that needs it waits. On
   * PostgreSQL one REPEATABLE READ READ ONLY transaction (one snapshot); on PGlite each
   * statement takes its own turn, so other requests interleave and there is no common
   * snapshot — `consistent` is false there and the caller must detect concurrent changes
   * (PGlite has no other writer than this process: the change feed tells it at once).
   */
  readPass<T>(fn: (q: Queryable, consistent: boolean) => Promise<T>): Promise<T>;
  /**
   * PGlite: whether the calling code holds the database's turn (runs inside a transaction or
   * query of its own). A write it waits for must not queue behind others that wait for that turn
   * (storage/create-group.ts). Absent on PostgreSQL, whose pool has no turn.
   */
  holdsTurn?(): boolean;
  /**
   * Subscribes to NOTIFY messages on a channel (cache invalidation across API nodes). When the
   * listening connection is lost, every handler is called with `-` (nothing is heard until it
   * is back: a cache must not serve meanwhile); when it is re-established, every handler is
   * called once with `*`: notifications may have been missed, so anything cached may be stale.
   */
  listen(channel: string, handler: (payload: string) => void): Promise<void>;
  /**
   * Resolves once every change committed before the call has been delivered to this node's
   * `listen` handlers. PostgreSQL: a round trip on the listening connection (the server sends
   * a listener its pending notifications before the answer), shared by concurrent callers;
   * rejects when there is no listening connection (lost, reconnecting: the caller reads the
   * database instead), and with a 503 FhirError when the server does not answer within
   * `acquireTimeoutMs` (a frozen server: the caller answers it). PGlite: at the end of the event
   * loop's turn (this process is the only writer; src/storage/turn.ts).
   *
   * `since` (a `performance.now()` time, e.g. when the request arrived): resolves at once when
   * a barrier sent at or after it has completed on the current connection — every change
   * committed before `since` has then been heard — so one request pays for one round trip.
   */
  caughtUp(since?: number): Promise<void>;
  close(): Promise<void>;
  /** PGlite only: the data folder as a tarball (used to make test templates). */
  dumpDataDir?(): Promise<Blob>;
}
