/**
 * What autovacuum's ANALYZE gives PostgreSQL, for PGlite, which has no autovacuum
 * (docs/errors.md#embedded-database-thread): after writes, tables that grew noticeably since
 * their statistics were taken are analyzed again in the background, so a search gets the same
 * plans whether its data came through REST or through `lattice import` (which analyzes at its
 * end). Without it a folder kept the statistics of an almost empty table, and one chained
 * search ran for minutes on a plan made for no rows.
 *
 * PGlite keeps no activity counters a check could read (`pg_stat_user_tables` stays at zero in
 * its single-user mode), so "changed enough" is measured by size: a table whose file has grown
 * past the pages its statistics counted by more than {@link GROWTH} plus {@link SLACK_PAGES}, or
 * that has pages but was never analyzed. ANALYZE samples a bounded number of rows (30,000 at
 * the default statistics target), so one run costs about the same on any table size.
 */

/** Relative growth past the analyzed size that makes statistics stale (autovacuum's scale factor). */
const GROWTH = 0.1;
/** Growth in pages below which a table is left alone (autovacuum's threshold, in pages). */
const SLACK_PAGES = 4;
/** How long after a write the check runs: writes in a burst share one check. */
export const ANALYZE_DELAY_MS = 1000;
/**
 * Most of the database thread's time the checks may take while writes go on: after a check
 * whose statements ran `t` ms, the next waits `t × (1 − SHARE) / SHARE` (at least
 * {@link ANALYZE_DELAY_MS}, at most {@link MAX_ANALYZE_DELAY_MS}). PGlite has one thread: an
 * ANALYZE of a large index table (~0.1–0.7 s) holds every request behind it, and under a steady
 * stream of creates the tables grew 10 % again within seconds — the checks took a fifth of the
 * thread's time and put their length into the creates' p99 (docs/benchmarks.md).
 */
export const ANALYZE_SHARE = 0.1;
/** Longest wait between two checks while writes go on. */
export const MAX_ANALYZE_DELAY_MS = 60_000;

/** The tables of the schema whose statistics are stale. */
const STALE_TABLES = `
  SELECT format('%I', c.relname) AS name
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = 'public' AND c.relkind = 'r'
    AND pg_relation_size(c.oid) / current_setting('block_size')::int >
        CASE WHEN c.reltuples < 0 THEN 0 ELSE c.relpages * (1 + ${GROWTH}) + ${SLACK_PAGES} END
  ORDER BY c.relname`;

export interface AutoAnalyze {
  /** A write committed: the check runs {@link ANALYZE_DELAY_MS} later unless one is due already. */
  noteWrite(): void;
  /** Resolves once no check is due or running (tests; shutdown). */
  idle(): Promise<void>;
  stop(): void;
}

/** The wait before the check that follows one whose statements ran `spentMs` (see {@link ANALYZE_SHARE}). */
export function analyzeDelay(spentMs: number): number {
  return Math.min(MAX_ANALYZE_DELAY_MS, Math.max(ANALYZE_DELAY_MS, (spentMs * (1 - ANALYZE_SHARE)) / ANALYZE_SHARE));
}

/**
 * `run` sends one statement as background work (behind waiting requests, no request deadline)
 * and answers its rows and `ms`, how long the statement itself ran (its wait for the turn not
 * counted). `onError` hears a failed check (logged by the caller; the next write schedules another).
 */
export function autoAnalyze(run: (sql: string) => Promise<{ rows: Array<Record<string, unknown>>; ms: number }>, onError: (err: unknown) => void): AutoAnalyze {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  let again = false;
  /** How long the last check's statements ran. */
  let spent = 0;

  const check = async () => {
    timer = undefined;
    spent = 0;
    try {
      const stale = await run(STALE_TABLES);
      spent += stale.ms;
      for (const row of stale.rows) {
        if (stopped) return;
        spent += (await run(`ANALYZE ${String(row.name)}`)).ms;
      }
    } catch (err) {
      if (!stopped) onError(err);
    }
  };
  const schedule = () => {
    if (stopped || timer) return;
    if (running) {
      again = true; // written while a check ran: look again when it ends
      return;
    }
    timer = setTimeout(() => {
      running = check().finally(() => {
        running = undefined;
        if (again) {
          again = false;
          schedule();
        }
      });
    }, analyzeDelay(spent));
    timer.unref();
  };
  return {
    noteWrite: schedule,
    async idle() {
      while (timer || running) {
        if (timer) await new Promise((resolve) => setTimeout(resolve, ANALYZE_DELAY_MS));
        if (running) await running;
      }
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
    },
  };
}
