import { PGlite } from '@electric-sql/pglite';
import { mkdirSync } from 'node:fs';
import type { Database, Queryable, QueryResult } from '../core/database.js';
import { lockDataFolder } from './data-folder-lock.js';

/**
 * Embedded PostgreSQL (WASM) — the zero-setup default. PGlite has one connection, so
 * transactions are serialized by the driver; that makes every transaction effectively
 * serializable, which the repository relies on no more than on PostgreSQL's row locks.
 */
export async function openPgliteDatabase(dataDir: string, options: { loadDataDir?: Blob } = {}): Promise<Database> {
  const inMemory = dataDir.startsWith('memory://');
  if (!inMemory) mkdirSync(dataDir, { recursive: true });
  const unlock = inMemory ? () => undefined : lockDataFolder(dataDir);
  // `loadDataDir` starts from a dumped data folder instead of running initdb (tests use a
  // migrated template: several times faster than a fresh cluster).
  let pg: PGlite;
  try {
    pg = await PGlite.create(inMemory ? undefined : dataDir, options.loadDataDir ? { loadDataDir: options.loadDataDir } : {});
  } catch (err) {
    unlock();
    throw err;
  }
  const wrap = (q: { query: PGlite['query'] }): Queryable => ({
    async query<T>(sql: string, params: unknown[] = []): Promise<QueryResult<T>> {
      const res = await q.query<T>(sql, params);
      return { rows: res.rows, rowCount: res.affectedRows ?? res.rows.length };
    },
  });
  const root = wrap(pg);
  return {
    driver: 'pglite',
    dumpDataDir: () => pg.dumpDataDir('none'),
    query: (sql, params) => root.query(sql, params),
    transaction: (fn) => pg.transaction((tx) => fn(wrap(tx))),
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
