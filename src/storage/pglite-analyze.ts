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

/**
 * `run` sends one statement as background work (behind waiting requests, no request deadline).
 * `onError` hears a failed check (logged by the caller; the next write schedules another).
 */
export function autoAnalyze(run: (sql: string) => Promise<{ rows: Array<Record<string, unknown>> }>, onError: (err: unknown) => void): AutoAnalyze {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  let again = false;

  const check = async () => {
    timer = undefined;
    try {
      const { rows } = await run(STALE_TABLES);
      for (const row of rows) {
        if (stopped) return;
        await run(`ANALYZE ${String(row.name)}`);
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
    }, ANALYZE_DELAY_MS);
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
