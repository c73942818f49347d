import type { Config } from '../config.js';
import type { Database } from '../core/database.js';
import { migrate } from './migrate.js';
import { openPgDatabase } from './pg-database.js';
import { openPgliteDatabase } from './pglite-database.js';

/** Opens the configured database (PostgreSQL when DATABASE_URL is set, else PGlite) and migrates it. */
export async function openDatabase(config: Pick<Config, 'databaseUrl' | 'dataDir'>): Promise<Database> {
  const db = config.databaseUrl ? await openPgDatabase(config.databaseUrl) : await openPgliteDatabase(config.dataDir);
  try {
    await migrate(db);
  } catch (err) {
    await db.close().catch(() => undefined);
    throw err;
  }
  return db;
}
