import pg from 'pg';
import type { Database, DatabaseHealth, DatabaseLimits, Queryable, QueryResult } from '../core/database.js';
import { databaseTimeout, pgFailure } from './database-errors.js';

/** Errors worth retrying a whole transaction for: serialization failure, deadlock. */
const RETRYABLE = new Set(['40001', '40P01']);

/** `/healthz` gives the database this long to answer (docs/errors.md#health-check). */
const HEALTH_TIMEOUT_MS = 800;

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
    throw pgFailure(err, statement) ?? err;
  };

  const run = async <T>(q: pg.Pool | pg.PoolClient, sql: string, params: unknown[] = []): Promise<QueryResult<T>> => {
    const res = await q.query(sql, params).catch(fail);
    return { rows: res.rows as T[], rowCount: res.rowCount ?? res.rows.length };
  };
  const copy = (client: pg.PoolClient, table: string, columns: string[], text: string): Promise<void> =>
    copyIn(client, `COPY ${table} (${columns.join(', ')}) FROM STDIN`, text).catch(fail);

  const listener = new Listener(connectionString, handlers);
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
        if (pgFailure(err, statement)?.status === 503) broken = err;
        throw err;
      } finally {
        client.release(broken === undefined ? undefined : broken instanceof Error ? broken : new Error('connection failed'));
      }
    },
    async transaction(fn) {
      for (let attempt = 1; ; attempt++) {
        const client = await pool.connect().catch(fail);
        const deadline = statement > 0 ? Date.now() + statement : Infinity;
        const check = () => {
          if (Date.now() > deadline) throw databaseTimeout(statement);
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
          const result = await fn(tx);
          check(); // past the limit: rolled back, not committed
          await run(client, 'COMMIT');
          return result;
        } catch (err) {
          const failure = pgFailure(err, statement);
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
        if (pgFailure(err, statement)?.status === 503) broken = err;
        else await client.query('ROLLBACK').catch((e: unknown) => (broken = e));
        throw err;
      } finally {
        client.removeListener('error', onError);
        client.release(broken === undefined ? undefined : broken instanceof Error ? broken : new Error('connection failed'));
      }
    },
    health: () => health.check(),
    listen: (channel, handler) => listener.listen(channel, handler),
    caughtUp: () => listener.caughtUp(),
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
 * The LISTEN connection. When it is lost (the server restarted) every handler hears `-`; it is
 * re-established every second until it works, and every handler then hears `*` (docs:
 * src/core/database.ts).
 */
class Listener {
  private client: pg.Client | undefined;
  private closed = false;
  private retry: NodeJS.Timeout | undefined;

  constructor(
    private readonly connectionString: string,
    private readonly handlers: Map<string, Array<(payload: string) => void>>,
  ) {}

  async listen(channel: string, handler: (payload: string) => void): Promise<void> {
    const list = this.handlers.get(channel) ?? [];
    const first = list.length === 0;
    list.push(handler);
    this.handlers.set(channel, list);
    if (!this.client) await this.connect();
    else if (first) await this.client.query(`LISTEN ${quote(channel)}`);
  }

  private inflight: Promise<void> | undefined;
  private queued: Promise<void> | undefined;

  /**
   * A barrier on the listening connection: `SELECT 1` sent after the call. PostgreSQL sends a
   * listening session its pending notifications before it answers a statement, and the client
   * emits them before the statement's result, so when it resolves every change committed
   * before the call has reached the handlers. Concurrent callers share one barrier: a caller
   * arriving while one is in flight waits for the next (sent after it).
   */
  caughtUp(): Promise<void> {
    if (this.queued) return this.queued;
    const start = (): Promise<void> => {
      const client = this.client;
      const p = client ? client.query('SELECT 1').then(() => undefined) : Promise.reject(new Error('not listening'));
      this.inflight = p;
      void p.then(
        () => this.inflight === p && (this.inflight = undefined),
        () => this.inflight === p && (this.inflight = undefined),
      );
      return p;
    };
    if (!this.inflight) return start();
    const queued = this.inflight.then(
      () => undefined,
      () => undefined,
    ).then(() => {
      this.queued = undefined;
      return start();
    });
    this.queued = queued;
    return queued;
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.connectionString, connectionTimeoutMillis: 5000 });
    client.on('notification', (msg) => {
      for (const h of this.handlers.get(msg.channel) ?? []) h(msg.payload ?? '');
    });
    const lost = () => {
      if (this.client !== client) return;
      this.client = undefined;
      void client.end().catch(() => undefined);
      // Nothing is heard until the connection is back: caches must not be trusted meanwhile.
      for (const list of this.handlers.values()) for (const h of list) h('-');
      this.scheduleReconnect();
    };
    client.on('error', lost);
    client.on('end', lost);
    await client.connect();
    for (const channel of this.handlers.keys()) await client.query(`LISTEN ${quote(channel)}`);
    this.client = client;
  }

  private scheduleReconnect(): void {
    if (this.closed || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      if (this.closed) return;
      this.connect().then(
        () => {
          for (const list of this.handlers.values()) for (const h of list) h('*');
        },
        () => this.scheduleReconnect(),
      );
    }, 1000);
    this.retry.unref();
  }

  close(): void {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    void client?.end().catch(() => undefined);
  }
}

function quote(channel: string): string {
  return `"${channel.replace(/"/g, '')}"`;
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
    const timedOut = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), HEALTH_TIMEOUT_MS)));
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
      const client = new pg.Client({ connectionString: this.connectionString, connectionTimeoutMillis: HEALTH_TIMEOUT_MS });
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
