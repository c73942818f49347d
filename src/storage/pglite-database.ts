import { PGlite } from '@electric-sql/pglite';
import { mkdirSync } from 'node:fs';
import type { Database, Queryable, QueryResult } from '../core/database.js';
import { lockDataFolder } from './data-folder-lock.js';

/**
 * Bounds on the write-ahead log of an embedded folder. PostgreSQL's defaults (up to 1 GB kept)
 * suit a server; for an embedded database the WAL is pure overhead on disk, and after one large
 * import it would stay at 1 GB (docs/terminology.md#database-size).
 */
const WAL_BOUNDS = ['-c', 'max_wal_size=128MB', '-c', 'min_wal_size=32MB'];

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
    pg = await PGlite.create(inMemory ? undefined : dataDir, {
      ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
      startParams: [...PGlite.defaultStartParams, ...WAL_BOUNDS],
    });
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
