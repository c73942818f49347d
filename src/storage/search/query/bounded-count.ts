import type { IndexedCriterion } from './sql-params.js';

/**
 * The bounded COUNT of a search (docs/rest.md#query-plans): how many of its matches there are,
 * up to `upTo`, reading about `upTo` of them — not a hash of every match of the filter, which is
 * what PostgreSQL builds for `count(*) FROM (SELECT 1 … WHERE EXISTS … LIMIT n)` when the filter
 * has many matches (the EXISTS becomes a hash semi join whose hash is built before the first row
 * is counted).
 *
 * One criterion drives: its index rows are read through the table's lookup index, and each row
 * is checked by a sub-plan that runs per row and so cannot be hashed (`OFFSET 0` keeps PostgreSQL
 * from turning it into a join): its resource meets the rest of the search (the `resource` row by
 * its primary key, the other criteria by their owner indexes). The LIMIT stops the read.
 */
export interface CountCandidate {
  /** The criterion's SQL as it stands in the search's WHERE (one of `where`). */
  sql: string;
  criterion: IndexedCriterion;
}

/**
 * Which criterion drives: the one whose rows are likely fewest, by the kind of its table — a
 * reference names one target, a token one code, a string a prefix, a quantity, number or date a
 * range. Ties go to the first parameter of the search.
 */
const DRIVE_ORDER = ['reference', 'token', 'uri', 'string', 'quantity', 'number', 'date'];

export function driverOf(candidates: CountCandidate[]): CountCandidate | undefined {
  const rank = (c: CountCandidate) => {
    const i = DRIVE_ORDER.indexOf(c.criterion.table);
    return i < 0 ? DRIVE_ORDER.length : i;
  };
  return candidates.reduce<CountCandidate | undefined>((best, c) => (best === undefined || rank(c) < rank(best) ? c : best), undefined);
}

/**
 * The bounded COUNT of at most `upTo` matches read from `driver`'s index rows; `where` is the
 * search's WHERE about `resource r` (the driver's criterion among them, left out here). `sql`
 * reads the first `upTo` matching rows once and gives how many there were (`found`) and of how
 * many resources (`n`): when they were all there is (`found` < `upTo`) or of `upTo` different
 * resources, `n` is the answer. Only when a resource had several matching rows among them (a
 * name's family and its text, two values ORed) does `again` count them anew, keeping a row only
 * when no matching row of the same resource comes before it (`ctid`). Two statements rather than
 * a CASE: PostgreSQL adds the cost of a sub-select it may never run to the statement's, and past
 * `jit_above_cost` compiles the statement (tens of milliseconds) before running it.
 */
export function boundedCountSql(driver: CountCandidate, where: string[], upTo: number): { sql: string; again: string } {
  const { table, alias: x, rows } = driver.criterion;
  const d = `${x}d`;
  const same = rows.replace(new RegExp(`\\b${x}\\.`, 'g'), `${d}.`);
  const rest = where.filter((w) => w !== driver.sql);
  const resource = `EXISTS (SELECT 1 FROM resource r WHERE ${[...rest, `r.id = ${x}.id`].join(' AND ')} OFFSET 0)`;
  const first = `NOT EXISTS (SELECT 1 FROM search_${table} ${d} WHERE ${same} AND ${d}.id = ${x}.id AND ${d}.ctid < ${x}.ctid OFFSET 0)`;
  const read = (also: string) => `SELECT ${x}.id FROM search_${table} ${x} WHERE ${rows} AND ${resource}${also} LIMIT ${upTo}`;
  return {
    sql: `SELECT count(DISTINCT id)::int AS n, count(*)::int AS found FROM (${read('')}) AS matched`,
    again: `SELECT count(*)::int AS n FROM (${read(` AND ${first}`)}) AS counted`,
  };
}
