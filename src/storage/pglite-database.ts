import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdirSync } from 'node:fs';
import type { Database, DatabaseHealth, DatabaseLimits, Queryable, QueryResult } from '../core/database.js';
import { databaseBusy, databaseTimeout } from './database-errors.js';
import { lockDataFolder } from './data-folder-lock.js';
import { autoAnalyze, type AutoAnalyze } from './pglite-analyze.js';
import { PGLITE_START_PARAMS, takeEarlyPglite } from './pglite-early.js';
import { PgliteWorker, type DeadlineOf } from './pglite-worker.js';
import { TurnLock } from './turn-lock.js';
import { endOfTurn } from './turn.js';

/** No limits: what a caller that passes none gets (tests of the driver, the CLI). */
const UNLIMITED: DatabaseLimits = { statementTimeoutMs: 0, acquireTimeoutMs: 0 };

/**
 * Embedded PostgreSQL (WASM) — the zero-setup default. PGlite has one connection, so
 * transactions are serialized by the driver; that makes every transaction effectively
 * serializable, which the repository relies on no more than on PostgreSQL's row locks.
 *
 * PGlite runs in its own thread (storage/pglite-worker.ts), so a long statement never holds the
 * event loop that answers HTTP. Every query and transaction takes its turn on a
 * first-come-first-served lock, so a query outside a transaction never runs inside another
 * request's open transaction, and a request that cannot have its turn within `acquireTimeoutMs`
 * gets a 503. Each statement has a deadline: `statementTimeoutMs`, and within a transaction no
 * later than the transaction's own limit. A statement past it is stopped by ending the thread
 * and opening the folder again (its transaction is lost, as in a crash); the request gets 503
 * (docs/errors.md#database-limits). An in-memory database cannot be reopened: the request gets
 * its 503 at the deadline while the statement finishes in the thread.
 */
export async function openPgliteDatabase(
  dataDir: string,
  options: { loadDataDir?: Blob; limits?: DatabaseLimits; autoAnalyze?: boolean; onAnalyzeError?: (err: unknown) => void } = {},
): Promise<PgliteDatabase> {
  const limits = options.limits ?? UNLIMITED;
  const inMemory = dataDir.startsWith('memory://');
  // The thread `lattice serve` started before its code was loaded (pglite-early.ts), if it is for this folder.
  const early = inMemory || options.loadDataDir ? undefined : await takeEarlyPglite(dataDir, PGLITE_START_PARAMS);
  if (!inMemory && !early) mkdirSync(dataDir, { recursive: true });
  const unlock = early?.unlock ?? (inMemory ? () => undefined : lockDataFolder(dataDir));
  const listeners = new Map<string, Set<(payload: string) => void>>();
  // `loadDataDir` starts from a dumped data folder instead of running initdb (tests use a
  // migrated template: several times faster than a fresh cluster).
  let pg: PgliteWorker;
  try {
    pg = await PgliteWorker.open({
      dataDir: inMemory ? undefined : dataDir,
      startParams: PGLITE_START_PARAMS,
      early,
      waitMs: limits.acquireTimeoutMs,
      ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
      onNotify: (channel, payload) => listeners.get(channel)?.forEach((handler) => handler(payload)),
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

  /** A statement's deadline: its own limit, and no later than `end` (its transaction's). */
  const deadline =
    (end = Infinity, timeoutMs = limits.statementTimeoutMs): DeadlineOf =>
    () => {
      if (limits.statementTimeoutMs <= 0) return undefined;
      const own = Date.now() + limits.statementTimeoutMs;
      return own <= end ? { at: own, error: () => databaseTimeout(limits.statementTimeoutMs) } : { at: end, error: () => databaseTimeout(timeoutMs) };
    };
  const checkDeadline = (end: number, timeoutMs = limits.statementTimeoutMs) => {
    if (Date.now() > end) throw databaseTimeout(timeoutMs);
  };
  /** Statements inside a transaction begun in thread generation `generation`, ending by `end`. */
  const inTransaction = (generation: number, end: number, timeoutMs?: number): Queryable => {
    const check = () => {
      // The thread was replaced (a statement was stopped): this transaction no longer exists.
      if (pg.generation !== generation) throw databaseTimeout(timeoutMs ?? limits.statementTimeoutMs);
      checkDeadline(end, timeoutMs);
    };
    return {
      async query<T>(sql: string, params: unknown[] = []): Promise<QueryResult<T>> {
        check();
        return pg.query<T>(sql, params, deadline(end, timeoutMs));
      },
      // PGlite's COPY reads the rows from its `/dev/blob` device, given per statement.
      async copyRows(table: string, columns: string[], text: string): Promise<void> {
        check();
        await pg.copy(`COPY ${table} (${columns.join(', ')}) FROM '/dev/blob'`, text, deadline(end, timeoutMs));
      },
    };
  };
  /** `waitMs`: how long to wait for the turn (a request: the acquire limit; maintenance: as long as it takes). */
  const withTurn = async <T>(fn: () => Promise<T>, background = false, waitMs = limits.acquireTimeoutMs): Promise<T> => {
    if (holding.getStore()?.active) return fn();
    const release = await turns.acquire(waitMs, databaseBusy, background);
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
  // PGlite has no autovacuum: statistics are refreshed in the background after writes.
  const analyzer: AutoAnalyze | undefined = options.autoAnalyze
    ? autoAnalyze(
        (sql) =>
          withTurn(async () => {
            const started = performance.now();
            const { rows } = await pg.query<Record<string, unknown>>(sql, []);
            return { rows, ms: performance.now() - started };
          }, true, 0),
        options.onAnalyzeError ?? (() => undefined),
      )
    : undefined;
  const wrote = () => analyzer?.noteWrite();
  const transaction = async <T>(fn: (tx: Queryable) => Promise<T>, timeoutMs?: number): Promise<T> => {
    const end = limits.statementTimeoutMs > 0 ? Date.now() + (timeoutMs ?? limits.statementTimeoutMs) : Infinity;
    const generation = pg.generation;
    await pg.query('BEGIN', [], deadline(end, timeoutMs));
    let result: T;
    try {
      result = await fn(inTransaction(generation, end, timeoutMs));
      checkDeadline(end, timeoutMs); // past the limit: rolled back, not committed
    } catch (err) {
      // A replaced thread took the transaction with it; else it is rolled back here.
      if (pg.generation === generation) await pg.query('ROLLBACK', [], deadline()).catch(() => undefined);
      throw err;
    }
    if (pg.generation !== generation) throw databaseTimeout(timeoutMs ?? limits.statementTimeoutMs);
    await pg.query('COMMIT', [], deadline(end, timeoutMs));
    wrote();
    return result;
  };

  return {
    driver: 'pglite',
    dumpDataDir: () => withTurn(() => pg.dump()),
    query: async (sql, params) => {
      const res = await withTurn(() => pg.query(sql, params ?? [], deadline()));
      if (WRITES.test(sql)) wrote();
      return res as never;
    },
    copyRows: async (table, columns, text) => {
      await withTurn(() => pg.copy(`COPY ${table} (${columns.join(', ')}) FROM '/dev/blob'`, text, deadline()));
      wrote();
    },
    analyzed: () => analyzer?.idle() ?? Promise.resolve(),
    holdsTurn: () => holding.getStore()?.active === true,
    transaction: (fn, options) => withTurn(() => transaction(fn, options?.timeoutMs)),
    // Each statement its own turn, behind waiting requests (TurnLock), without the request
    // deadline (see Database.readPass).
    readPass: (fn) => fn({ query: (sql, params) => withTurn(() => pg.query(sql, params ?? []), true) }, false),
    async health(): Promise<DatabaseHealth> {
      // Never waits for a turn: when a request holds the database, what can be said honestly
      // is whether it is still within its time limit.
      if (pg.unavailable) return { driver: 'pglite', state: 'unavailable' };
      const overdue = (heldMs: number) => limits.statementTimeoutMs > 0 && heldMs > limits.statementTimeoutMs + 1000;
      const release = turns.tryAcquire();
      if (!release) return { driver: 'pglite', state: overdue(turns.heldForMs() ?? 0) ? 'unavailable' : 'busy' };
      try {
        // A statement given up at its deadline may still run (in memory): busy, not queued behind.
        const running = pg.busyForMs();
        if (running !== undefined) return { driver: 'pglite', state: overdue(running) ? 'unavailable' : 'busy' };
        await pg.query('SELECT 1', [], () => ({ at: Date.now() + HEALTH_WAIT_MS, error: databaseBusy, giveUp: true }));
        return { driver: 'pglite', state: 'ok' };
      } catch {
        return { driver: 'pglite', state: 'unavailable' };
      } finally {
        release();
      }
    },
    // One process hears every change as it commits: always caught up. Answered at the end of the
    // turn (one promise for all its callers), so the requests read in one poll go on together (turn.ts).
    caughtUp: endOfTurn,
    async listen(channel, handler) {
      const set = listeners.get(channel) ?? new Set();
      listeners.set(channel, set);
      set.add(handler);
      if (set.size === 1) await pg.listen(channel);
    },
    close: async () => {
      analyzer?.stop();
      try {
        await pg.close();
      } finally {
        unlock();
      }
    },
  };
}

/** A statement outside a transaction that changes rows (its writes make statistics stale). */
const WRITES = /^\s*(INSERT|UPDATE|DELETE|COPY|WITH)\b/i;

/** The embedded database: a {@link Database} that can say when its background ANALYZE is done. */
export interface PgliteDatabase extends Database {
  /** Resolves once no background ANALYZE is due or running (tests). */
  analyzed(): Promise<void>;
}

/** How long `/healthz` waits for the thread's answer to `SELECT 1` (within the check's 800 ms). */
const HEALTH_WAIT_MS = 700;
