import type { Config } from '../config.js';
import type { Database } from '../core/database.js';
import { migrate } from './migrate.js';
import { openPgDatabase } from './pg-database.js';
import { openPgliteDatabase } from './pglite-database.js';

/** Opens the configured database (PostgreSQL when DATABASE_URL is set, else PGlite) and migrates it. */
export async function openDatabase(config: Pick<Config, 'databaseUrl' | 'dataDir' | 'database'>): Promise<Database> {
  const { poolSize, ...limits } = config.database;
  const db = config.databaseUrl
    ? await openPgDatabase(config.databaseUrl, { poolSize, limits })
    : await openPgliteDatabase(config.dataDir, { limits });
  try {
    await migrate(db);
  } catch (err) {
    await db.close().catch(() => undefined);
    throw err;
  }
  return db;
}
