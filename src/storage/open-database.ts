import type { Config } from '../config.js';
import type { Database } from '../core/database.js';
import { migrate } from './migrate.js';

/**
 * Opens the configured database (PostgreSQL when DATABASE_URL is set, else PGlite) and migrates it.
 * Each driver is loaded only when chosen: loading the other one costs start-up time for nothing
 * (docs/errors.md#start-up).
 */
export async function openDatabase(config: Pick<Config, 'databaseUrl' | 'dataDir' | 'database'>): Promise<Database> {
  const { poolSize, autoAnalyze, ...limits } = config.database;
  const db = config.databaseUrl
    ? await (await import('./pg-database.js')).openPgDatabase(config.databaseUrl, { poolSize, limits })
    : await (await import('./pglite-database.js')).openPgliteDatabase(config.dataDir, {
        limits,
        autoAnalyze: autoAnalyze ?? true,
        onAnalyzeError: (err) => process.emitWarning(`background ANALYZE failed: ${err instanceof Error ? err.message : String(err)}`),
      });
  try {
    await migrate(db);
  } catch (err) {
    await db.close().catch(() => undefined);
    throw err;
  }
  return db;
}
