import { AsyncLocalStorage } from 'node:async_hooks';
import { PGlite } from '@electric-sql/pglite';
import { mkdirSync } from 'node:fs';
import type { Database, DatabaseHealth, DatabaseLimits, Queryable, QueryResult } from '../core/database.js';
import { databaseBusy, databaseTimeout } from './database-errors.js';
import { lockDataFolder } from './data-folder-lock.js';
import { TurnLock } from './turn-lock.js';

/**
 * PostgreSQL's start parameters for PGlite: PGlite's own, with a smaller buffer cache. PGlite's
 * default (initdb's 128 MB `shared_buffers`) is set up inside WebAssembly memory on every open,
 * which made opening a data folder several times slower than with 32 MB (docs/errors.md#start-up);
 * pages beyond the cache are still read through the operating system's file cache.
 */
const START_PARAMS = [...PGlite.defaultStartParams, '-c', 'shared_buffers=32MB'];

/** No limits: what a caller that passes none gets (tests of the driver, the CLI). */
const UNLIMITED: DatabaseLimits = { statementTimeoutMs: 0, acquireTimeoutMs: 0 };

/**
 * Bounds on the write-ahead log of an embedded folder. PostgreSQL's defaults (up to 1 GB kept)
 * suit a server; for an embedded database the WAL is pure overhead on disk, and after one large
 * import it would stay at 1 GB (docs/errors.md#data-folder).
 */
const WAL_BOUNDS = ['-c', 'max_wal_size=128MB', '-c', 'min_wal_size=32MB'];

/**
 * Embedded PostgreSQL (WASM) — the zero-setup default. PGlite has one connection, so
 * transactions are serialized by the driver; that makes every transaction effectively
 * serializable, which the repository relies on no more than on PostgreSQL's row locks.
 *
 * Every query and transaction takes its turn on a first-come-first-served lock, so a query
 * outside a transaction never runs inside another request's open transaction, and a request
 * that cannot have its turn within `acquireTimeoutMs` gets a 503. A statement runs on this
 * thread and cannot be interrupted (PGlite ignores `statement_timeout`): the guard is checked
 * between statements — a transaction that has held the database longer than
 * `statementTimeoutMs` is rolled back at its next statement or at its commit
 * (docs/errors.md#database-limits).
 */
export async function openPgliteDatabase(
  dataDir: string,
  options: { loadDataDir?: Blob; limits?: DatabaseLimits } = {},
): Promise<Database> {
  const limits = options.limits ?? UNLIMITED;
  const inMemory = dataDir.startsWith('memory://');
  if (!inMemory) mkdirSync(dataDir, { recursive: true });
  const unlock = inMemory ? () => undefined : lockDataFolder(dataDir);
  // `loadDataDir` starts from a dumped data folder instead of running initdb (tests use a
  // migrated template: several times faster than a fresh cluster).
  let pg: PGlite;
  try {
    pg = await PGlite.create(inMemory ? undefined : dataDir, {
      startParams: [...START_PARAMS, ...WAL_BOUNDS],
      ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
    });
  } catch (err) {
    unlock();
    throw err;
  }
  const turns = new TurnLock();
  // The turn this async context holds: its own queries (also through the root object, as some
  // code does inside a transaction) must not wait for themselves. Work started inside a turn
  // that outlives it (a background wake-up) finds `active` false and waits like anyone.
  const holding = new AsyncLocalStorage<{ active: boolean }>();

  const deadlineOf = (start: number, timeoutMs = limits.statementTimeoutMs) => (limits.statementTimeoutMs > 0 ? start + timeoutMs : Infinity);
  const checkDeadline = (deadline: number, timeoutMs = limits.statementTimeoutMs) => {
    if (Date.now() > deadline) throw databaseTimeout(timeoutMs);
  };
  const wrap = (q: { query: PGlite['query'] }, deadline: number, timeoutMs?: number): Queryable => ({
    async query<T>(sql: string, params: unknown[] = []): Promise<QueryResult<T>> {
      checkDeadline(deadline, timeoutMs);
      const res = await q.query<T>(sql, params);
      return { rows: res.rows, rowCount: res.affectedRows ?? res.rows.length };
    },
    // PGlite's COPY reads the rows from its `/dev/blob` device, given per statement.
    async copyRows(table: string, columns: string[], text: string): Promise<void> {
      checkDeadline(deadline, timeoutMs);
      await q.query(`COPY ${table} (${columns.join(', ')}) FROM '/dev/blob'`, [], { blob: new Blob([text]) });
    },
  });
  const withTurn = async <T>(fn: () => Promise<T>, background = false): Promise<T> => {
    if (holding.getStore()?.active) return fn();
    const release = await turns.acquire(limits.acquireTimeoutMs, databaseBusy, background);
    const turn = { active: true };
    try {
      return await holding.run(turn, fn);
    } finally {
      turn.active = false;
      // Off between turns: an enabled AsyncLocalStorage puts a hook on every promise of the
      // process (measured ~2.7× the cost of an await), and requests answered from memory take
      // no turn at all. The next turn's `run` enables it again.
      holding.disable();
      release();
    }
  };

  return {
    driver: 'pglite',
    dumpDataDir: () => withTurn(() => pg.dumpDataDir('none')),
    query: (sql, params) => withTurn(() => wrap(pg, Infinity).query(sql, params)),
    copyRows: (table, columns, text) => withTurn(() => (wrap(pg, Infinity).copyRows as NonNullable<Queryable['copyRows']>)(table, columns, text)),
    transaction: (fn, options) =>
      withTurn(() => {
        const deadline = deadlineOf(Date.now(), options?.timeoutMs);
        return pg.transaction(async (tx) => {
          const result = await fn(wrap(tx, deadline, options?.timeoutMs));
          checkDeadline(deadline, options?.timeoutMs); // past the limit: rolled back, not committed
          return result;
        });
      }),
    // Each statement its own turn, behind waiting requests (TurnLock), without the request
    // deadline (see Database.readPass). PGlite runs a statement synchronously and its promise
    // settles as a microtask, so a loop of statements would never let the event loop take a new
    // connection or request: each statement first yields to it (a 350k index load held /healthz
    // for 30 s without this).
    readPass: (fn) =>
      fn(
        {
          query: async (sql, params) => {
            await new Promise<void>((resolve) => setImmediate(resolve));
            return withTurn(() => wrap(pg, Infinity).query(sql, params), true);
          },
        },
        false,
      ),
    async health(): Promise<DatabaseHealth> {
      // Never waits for a turn: when a request holds the database, what can be said honestly
      // is whether it is still within its time limit.
      const release = turns.tryAcquire();
      if (!release) {
        const heldMs = turns.heldForMs() ?? 0;
        const overdue = limits.statementTimeoutMs > 0 && heldMs > limits.statementTimeoutMs + 1000;
        return { driver: 'pglite', state: overdue ? 'unavailable' : 'busy' };
      }
      try {
        await pg.query('SELECT 1');
        return { driver: 'pglite', state: 'ok' };
      } catch {
        return { driver: 'pglite', state: 'unavailable' };
      } finally {
        release();
      }
    },
    caughtUp: async () => undefined,
    async listen(channel, handler) {
      await pg.listen(channel, handler);
    },
    close: async () => {
      try {
        await pg.close();
      } finally {
        unlock();
      }
    },
  };
}
