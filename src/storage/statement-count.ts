import type { Database, Queryable } from '../core/database.js';

/**
 * Statements sent to the database since the process started, counted when
 * `LATTICE_DEBUG_STATEMENTS=1` (docs/rest.md#cost-of-a-request): every statement is one round
 * trip on PostgreSQL, a transaction's BEGIN and COMMIT included. Read the difference around a
 * request made while nothing else runs.
 */
export const statementCounts = { statements: 0, transactions: 0, copies: 0 };

/** True when the counting wrapper is asked for (set before the application starts). */
export function countingRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.LATTICE_DEBUG_STATEMENTS === '1';
}

/** `db` with every statement, transaction and COPY counted in `statementCounts`. */
export function countStatements(db: Database): Database {
  const counted = (q: Queryable): Queryable => ({
    query: (sql, params) => {
      statementCounts.statements++;
      return q.query(sql, params);
    },
    ...(q.copyRows
      ? {
          copyRows: (table: string, columns: string[], text: string) => {
            statementCounts.copies++;
            statementCounts.statements++;
            return (q.copyRows as NonNullable<Queryable['copyRows']>)(table, columns, text);
          },
        }
      : {}),
    ...(q.afterEnd ? { afterEnd: (fn: () => void) => (q.afterEnd as NonNullable<Queryable['afterEnd']>)(fn) } : {}),
  });
  const root = counted(db);
  const copyRows = root.copyRows?.bind(root);
  return {
    driver: db.driver,
    query: (sql, params) => root.query(sql, params),
    ...(copyRows ? { copyRows } : {}),
    health: () => db.health(),
    // Any further arguments (options) pass through unchanged.
    transaction: ((fn: (tx: Queryable) => Promise<unknown>, ...rest: unknown[]) =>
      (db.transaction as (f: typeof fn, ...r: unknown[]) => Promise<unknown>)((tx) => {
        statementCounts.transactions++;
        statementCounts.statements += 2; // BEGIN, COMMIT (or ROLLBACK)
        return fn(counted(tx));
      }, ...rest)) as Database['transaction'],
    readPass: (fn) => db.readPass((q, consistent) => fn(counted(q), consistent)),
    listen: (channel, handler) => db.listen(channel, handler),
    caughtUp: (since) => db.caughtUp(since),
    close: () => db.close(),
    ...(db.dumpDataDir ? { dumpDataDir: () => (db.dumpDataDir as NonNullable<Database['dumpDataDir']>)() } : {}),
    ...(db.holdsTurn ? { holdsTurn: () => (db.holdsTurn as NonNullable<Database['holdsTurn']>)() } : {}),
  };
}
