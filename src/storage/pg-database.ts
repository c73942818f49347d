import pg from 'pg';
import type { Database, DatabaseHealth, DatabaseLimits, Queryable, QueryResult } from '../core/database.js';
import { databaseTimeout, pgFailure } from './database-errors.js';
import { Listener } from './pg-listener.js';

/** Errors worth retrying a whole transaction for: serialization failure, deadlock. */
const RETRYABLE = new Set(['40001', '40P01']);

/** `/healthz` gives the database this long to answer (docs/errors.md#health-check). */
const HEALTH_TIMEOUT_MS = 800;
/** A health timer firing this much later than asked shows a held event loop, not a slow database. */
const LATE_TIMER_MS = 200;

/** No limits: what a caller that passes none gets. */
const UNLIMITED: DatabaseLimits = { statementTimeoutMs: 0, acquireTimeoutMs: 0 };

// PostgreSQL returns int8/numeric as strings by default; counts are small enough for numbers.
pg.types.setTypeParser(20, (v) => Number(v));

/**
 * A PostgreSQL server through a `pg` connection pool, with the time limits of
 * docs/errors.md#database-limits: `statement_timeout` and `idle_in_transaction_session_timeout`
 * on every connection (the server cancels), a client-side read timeout a little longer (a
 * frozen server that cancels nothing), a limit on waiting for a pooled connection, and a
 * transaction deadline checked between statements. A failure that is the server's state
 * (stopped, frozen, busy) becomes a 503; a connection that failed so is discarded, never reused.
 */
export async function openPgDatabase(connectionString: string, options: { poolSize?: number; limits?: DatabaseLimits } = {}): Promise<Database> {
  const limits = options.limits ?? UNLIMITED;
  const statement = limits.statementTimeoutMs;
  const connectTimeout = limits.acquireTimeoutMs;
  const pool = new pg.Pool({
    connectionString,
    max: options.poolSize ?? 10,
    ...(connectTimeout > 0 ? { connectionTimeoutMillis: connectTimeout } : {}),
    ...(statement > 0 ? { statement_timeout: statement, idle_in_transaction_session_timeout: statement, query_timeout: statement + 2000 } : {}),
  });
  pool.on('error', () => {
    /* idle client errors are reported on the next checkout */
  });
  const handlers = new Map<string, Array<(payload: string) => void>>();
  const fail = (err: unknown): never => {
    throw pgFailure(err, statement, connectTimeout) ?? err;
  };

  const run = async <T>(q: pg.Pool | pg.PoolClient, sql: string, params: unknown[] = []): Promise<QueryResult<T>> => {
    const res = await q.query(sql, params).catch(fail);
    return { rows: res.rows as T[], rowCount: res.rowCount ?? res.rows.length };
  };
  const copy = (client: pg.PoolClient, table: string, columns: string[], text: string): Promise<void> =>
    copyIn(client, `COPY ${table} (${columns.join(', ')}) FROM STDIN`, text).catch(fail);

  // Every wait on the listening connection is bounded like waiting for a pooled one.
  const listener = new Listener(connectionString, handlers, connectTimeout);
  const health = new HealthProbe(connectionString);

  return {
    driver: 'pg',
    query: (sql, params) => run(pool, sql, params),
    async copyRows(table, columns, text) {
      const client = await pool.connect().catch(fail);
      let broken: unknown;
      try {
        await copy(client, table, columns, text);
      } catch (err) {
        if (pgFailure(err, statement, connectTimeout)?.status === 503) broken = err;
        throw err;
      } finally {
        client.release(broken === undefined ? undefined : broken instanceof Error ? broken : new Error('connection failed'));
      }
    },
    async transaction(fn, options) {
      const limit = options?.timeoutMs ?? statement;
      for (let attempt = 1; ; attempt++) {
        const client = await pool.connect().catch(fail);
        const deadline = statement > 0 ? Date.now() + limit : Infinity;
        const check = () => {
          if (Date.now() > deadline) throw databaseTimeout(limit);
        };
        const ended: Array<() => void> = [];
        const tx: Queryable = {
          query: (sql, params) => {
            check();
            return run(client, sql, params);
          },
          copyRows: (table, columns, text) => {
            check();
            return copy(client, table, columns, text);
          },
          afterEnd: (f) => ended.push(f),
        };
        let broken: unknown;
        // A checked-out connection has no listener of the pool's: an error the server sends
        // between statements (e.g. the idle-in-transaction timeout ended the session) lands here.
        const onError = (err: Error) => (broken = err);
        client.on('error', onError);
        try {
          await run(client, 'BEGIN');
          // A transaction given more than the statement limit (a Bundle: a share per entry) may
          // also pause that long between its statements; each statement keeps its own limit.
          if (statement > 0 && limit > statement) await run(client, `SET LOCAL idle_in_transaction_session_timeout = ${Math.floor(limit)}`);
          const result = await fn(tx);
          check(); // past the limit: rolled back, not committed
          await run(client, 'COMMIT');
          return result;
        } catch (err) {
          const failure = pgFailure(err, statement, connectTimeout);
          if (failure?.status === 503) broken = err; // the connection may be mid-query or dead
          else await client.query('ROLLBACK').catch((e: unknown) => (broken = e));
          const code = (err as { code?: string }).code;
          if (!broken && code && RETRYABLE.has(code) && attempt < 5) continue;
          throw failure ?? err;
        } finally {
          for (const f of ended) f();
          // A connection that failed is discarded (`release(err)`), never handed to the next request.
          client.removeListener('error', onError);
          client.release(broken === undefined ? undefined : broken instanceof Error ? broken : new Error('connection failed'));
        }
      }
    },
    async readPass(fn) {
      // One snapshot, without the request limits: the connection's statement and idle
      // timeouts are lifted for this transaction only (SET LOCAL), no deadline is checked.
      // The client-side read timeout still bounds each statement (a frozen server).
      const client = await pool.connect().catch(fail);
      let broken: unknown;
      const onError = (err: Error) => (broken = err);
      client.on('error', onError);
      try {
        await run(client, 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
        await run(client, 'SET LOCAL statement_timeout = 0');
        await run(client, 'SET LOCAL idle_in_transaction_session_timeout = 0');
        const result = await fn({ query: (sql, params) => run(client, sql, params) }, true);
        await run(client, 'COMMIT');
        return result;
      } catch (err) {
        if (pgFailure(err, statement, connectTimeout)?.status === 503) broken = err;
        else await client.query('ROLLBACK').catch((e: unknown) => (broken = e));
        throw err;
      } finally {
        client.removeListener('error', onError);
        client.release(broken === undefined ? undefined : broken instanceof Error ? broken : new Error('connection failed'));
      }
    },
    health: () => health.check(),
    listen: (channel, handler) => listener.listen(channel, handler),
    caughtUp: (since) => listener.caughtUp(since),
    async close() {
      listener.close();
      health.close();
      await pool.end();
    },
  };
}

/**
 * COPY … FROM STDIN on `client` with `text` as the data (`pg` has no COPY API of its own: the
 * query object answers the server's CopyInResponse with the data and CopyDone). The outcome
 * comes through the query's callback, not its events: with a read timeout (`query_timeout`)
 * `pg` reports errors to the callback only.
 */
function copyIn(client: pg.PoolClient, sql: string, text: string): Promise<void> {
  const data = Buffer.from(text, 'utf8');
  return new Promise<void>((resolve, reject) => {
    const query = new (class extends pg.Query {
      handleCopyInResponse(connection: { sendCopyFromChunk(chunk: Buffer): void; endCopyFrom(): void }): void {
        connection.sendCopyFromChunk(data);
        connection.endCopyFrom();
      }
    })(sql, (err) => (err ? reject(err) : resolve()));
    client.query(query);
  });
}

/**
 * `/healthz` on PostgreSQL: `SELECT 1` on a connection of its own (never queued behind the
 * pool's users), answered within HEALTH_TIMEOUT_MS or `unavailable` (and the connection,
 * possibly stuck on a frozen server, is dropped; the next check opens a new one).
 */
class HealthProbe {
  private client: pg.Client | undefined;
  private closed = false;

  constructor(private readonly connectionString: string) {}

  async check(): Promise<DatabaseHealth> {
    let timer: NodeJS.Timeout | undefined;
    // A timer that fires late means this process's event loop was held (a long request), not
    // that the database is slow: the answer may be waiting to be read, in the I/O phase right
    // after the timers. The probe then waits once more instead of reporting the database
    // unavailable (docs/errors.md#health-check).
    const timedOut = new Promise<false>((resolve) => {
      const arm = (retries: number) => {
        const armed = performance.now();
        timer = setTimeout(() => {
          const late = performance.now() - armed - HEALTH_TIMEOUT_MS;
          if (late > LATE_TIMER_MS && retries > 0) arm(retries - 1);
          else resolve(false);
        }, HEALTH_TIMEOUT_MS);
      };
      arm(1);
    });
    const answered = this.ping().then(
      () => true,
      () => false,
    );
    const ok = await Promise.race([answered, timedOut]);
    clearTimeout(timer);
    if (!ok) this.drop();
    return { driver: 'pg', state: ok ? 'ok' : 'unavailable' };
  }

  private async ping(): Promise<void> {
    if (this.closed) throw new Error('closed');
    if (!this.client) {
      // No connection timeout of pg's own: check()'s timer bounds the connect too (and drops a
      // client that did not connect), and it knows a late timer from a slow database.
      const client = new pg.Client({ connectionString: this.connectionString });
      client.on('error', () => {
        if (this.client === client) this.drop();
      });
      this.client = client;
      await client.connect();
    }
    await this.client.query('SELECT 1');
  }

  private drop(): void {
    const client = this.client;
    this.client = undefined;
    // end() waits for the server; a frozen one never answers, so the socket is destroyed.
    (client as unknown as { connection?: { stream?: { destroy(): void } } } | undefined)?.connection?.stream?.destroy();
    void client?.end().catch(() => undefined);
  }

  close(): void {
    this.closed = true;
    this.drop();
  }
}
