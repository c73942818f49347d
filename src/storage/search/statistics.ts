import type { Queryable } from '../../core/database.js';
import { INDEX_TABLES } from './index-rows.js';

/**
 * Keeps planner statistics of the search tables fresh where nothing else does. A PostgreSQL
 * server has autovacuum; embedded PGlite runs no background workers, so its tables are never
 * analyzed and the planner believes they hold one row — it then re-scans an index for every
 * candidate resource and a 1,000-row search takes a second instead of milliseconds.
 * After 100, 200, 400, … writes (then every 50,000), the next search runs ANALYZE first.
 */
export class StatisticsSchedule {
  private writes = 0;
  private nextAt = 100;

  /** Counts indexed writes (one by default). */
  wrote(count = 1): void {
    this.writes += count;
  }

  /** Runs ANALYZE when due, on PGlite only (`q` is the Database handed to search). */
  async refreshIfDue(q: Queryable): Promise<void> {
    if (this.writes < this.nextAt || (q as { driver?: string }).driver !== 'pglite') return;
    this.nextAt = this.writes + Math.min(this.writes, 50_000);
    const tables = ['resource', ...INDEX_TABLES.map((t) => `search_${t}`)];
    await q.query(`ANALYZE ${tables.join(', ')}`);
  }
}
