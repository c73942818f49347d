import pg from 'pg';
import type { Database, Queryable, QueryResult } from '../core/database.js';

/** Errors worth retrying a whole transaction for: serialization failure, deadlock. */
const RETRYABLE = new Set(['40001', '40P01']);

// PostgreSQL returns int8/numeric as strings by default; counts are small enough for numbers.
pg.types.setTypeParser(20, (v) => Number(v));

/** A PostgreSQL server through a `pg` connection pool. */
export async function openPgDatabase(connectionString: string, poolSize = 10): Promise<Database> {
  const pool = new pg.Pool({ connectionString, max: poolSize });
  pool.on('error', () => {
    /* idle client errors are reported on the next checkout */
  });
  let listener: pg.Client | undefined;
  const handlers = new Map<string, Array<(payload: string) => void>>();

  const run = async <T>(q: pg.Pool | pg.PoolClient, sql: string, params: unknown[] = []): Promise<QueryResult<T>> => {
    const res = await q.query(sql, params);
    return { rows: res.rows as T[], rowCount: res.rowCount ?? res.rows.length };
  };

  return {
    driver: 'pg',
    query: (sql, params) => run(pool, sql, params),
    async transaction(fn) {
      for (let attempt = 1; ; attempt++) {
        const client = await pool.connect();
        const tx: Queryable = { query: (sql, params) => run(client, sql, params) };
        try {
          await client.query('BEGIN');
          const result = await fn(tx);
          await client.query('COMMIT');
          return result;
        } catch (err) {
          await client.query('ROLLBACK').catch(() => undefined);
          const code = (err as { code?: string }).code;
          if (code && RETRYABLE.has(code) && attempt < 5) continue;
          throw err;
        } finally {
          client.release();
        }
      }
    },
    async listen(channel, handler) {
      if (!listener) {
        listener = new pg.Client({ connectionString });
        await listener.connect();
        listener.on('notification', (msg) => {
          for (const h of handlers.get(msg.channel) ?? []) h(msg.payload ?? '');
        });
        listener.on('error', () => undefined);
      }
      const list = handlers.get(channel) ?? [];
      if (list.length === 0) await listener.query(`LISTEN "${channel.replace(/"/g, '')}"`);
      list.push(handler);
      handlers.set(channel, list);
    },
    async close() {
      await listener?.end().catch(() => undefined);
      await pool.end();
    },
  };
}
