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

/**
 * The other form of the bounded COUNT: `count(*)` over the search's own WHERE with the `LIMIT`,
 * the plan left to the planner — for few matches a hash of the criterion's matching ids, the
 * `resource` rows read in physical order rather than probed one by one by primary key (1,470
 * buffers where the driver form read 4,036 for 1,560 matching Encounters). Each resource is seen
 * once: no second statement. Its columns are the driver form's (`n`, `found`).
 */
export function plannedCountSql(whereSql: string, upTo: number): string {
  return `SELECT count(*)::int AS n, count(*)::int AS found FROM (SELECT 1 FROM resource r WHERE ${whereSql} LIMIT ${upTo}) AS counted`;
}

export type CountForm = 'driver' | 'planned';

interface Chosen {
  form: CountForm;
  at: number;
  /** The planner's estimate of the driver's index rows. */
  rows?: number;
}

/** How long a choice is kept (ms): statistics change slowly, the choice only moves the cost. */
const CHOICE_MS = 60_000;
const MAX_CHOICES = 500;
const choices = new Map<string, Chosen>();

/** The driver's index rows (for their estimate): `SELECT 1 FROM search_<table> <alias> WHERE <rows>`. */
export function driverRowsSql(driver: CountCandidate): string {
  return `SELECT 1 FROM search_${driver.criterion.table} ${driver.criterion.alias} WHERE ${driver.criterion.rows}`;
}

/**
 * Which form of the bounded COUNT reads less, by the planner's estimate of the driver's index
 * rows (`driverRowsSql`, from the column statistics of its table: closer to the truth than the
 * estimate of the whole search, which multiplies the selectivities of its sub-selects and came
 * out 2.5–12 times too low), read by ONE `EXPLAIN` (the search's WHERE beside it in a
 * `UNION ALL`, so that every bind value has a use; the first input of the Append is the
 * driver's): the planned form (`plannedCountSql`) when they are estimated at most
 * {@link SMALL_HASH} × `upTo` — a hash of that many ids is cheap —, the driver form otherwise,
 * where the planned form may hash every match (a code of 30,770 of 153,850 Observations:
 * 552 ms). A search most of whose type matches stays on the driver form: the planner may then
 * hash the whole index table, which was not measured at scale. The answer is the same either
 * way; only the cost differs, so the choice is kept for the same statement and values for a
 * minute (a search repeated, a result paged) and costs no statement then. An estimate far below
 * the truth can still pick the planned form for many matches: the cost of before, for that search.
 */
export async function chooseCountForm(
  query: QueryFn,
  sql: { whereSql: string; driverSql: string },
  values: unknown[],
  upTo: number,
  now = Date.now(),
): Promise<CountForm> {
  const { whereSql, driverSql } = sql;
  const key = countKey(whereSql, values, upTo);
  const known = keptChoice(key, now);
  if (known) return known.form;
  const matching = firstInput(await explainPlan(query, `(${driverSql}) UNION ALL (SELECT 1 FROM resource r WHERE ${whereSql})`, values))?.['Plan Rows'];
  const form: CountForm = matching !== undefined && matching <= SMALL_HASH * upTo ? 'planned' : 'driver';
  if (choices.size >= MAX_CHOICES) choices.clear();
  choices.set(key, { form, at: now, rows: matching });
  return form;
}

/**
 * Whether `chooseCountForm` found, within the last minute and without asking the planner again,
 * that this statement and values have at most `few` matching index rows (and so the plain form):
 * a search asked again can then count its matches in its page statement (run-search.ts), one
 * statement instead of two.
 */
export function knownFewMatches(whereSql: string, values: unknown[], upTo: number, few: number, now = Date.now()): boolean {
  const known = keptChoice(countKey(whereSql, values, upTo), now);
  return known?.form === 'planned' && known.rows !== undefined && known.rows <= few;
}

/** The choice kept for `key`, if made within the last minute. */
function keptChoice(key: string, now: number): Chosen | undefined {
  const known = choices.get(key);
  return known && now - known.at < CHOICE_MS ? known : undefined;
}

type QueryFn = (sql: string, values: unknown[]) => Promise<{ rows: Array<Record<string, unknown>> }>;

/**
 * The root of the plan `EXPLAIN (FORMAT JSON) <sql>` gives (the same on PostgreSQL and PGlite:
 * JSON text or an already parsed value): the planner's estimates from the table statistics,
 * no row read.
 */
export async function explainPlan(query: QueryFn, sql: string, values: unknown[]): Promise<PlanRows | undefined> {
  const res = await query(`EXPLAIN (FORMAT JSON) ${sql}`, values);
  const cell = Object.values(res.rows[0] ?? {})[0];
  const plan = (typeof cell === 'string' ? JSON.parse(cell) : cell) as Array<{ Plan?: PlanRows }> | undefined;
  return plan?.[0]?.Plan;
}

const countKey = (whereSql: string, values: unknown[], upTo: number) => `${upTo}\u0000${whereSql}\u0000${JSON.stringify(values)}`;

/** Estimated matches, in multiples of the bound, up to which a hash of them is cheap. */
const SMALL_HASH = 2;

/** Forgets the choices made (tests: each choice asked of the planner again). */
export function forgetCountForms(): void {
  choices.clear();
}

export interface PlanRows {
  'Plan Rows'?: number;
  Plans?: PlanRows[];
}

/** The first input of the plan's Append (the first node with several inputs). */
function firstInput(plan: PlanRows | undefined): PlanRows | undefined {
  let node = plan;
  while (node && (node.Plans?.length ?? 0) === 1) node = node.Plans?.[0];
  return node?.Plans?.[0];
}
