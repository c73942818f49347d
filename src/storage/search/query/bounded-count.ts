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
 * The other form of the bounded COUNT: the type's `resource` rows walked (by the planner's choice
 * of index), each checked by the search's criteria as sub-selects that run once per row — a
 * criterion inside `(SELECT …)` is not turned into a join, so no hash of every match is built
 * before the first row is counted; the LIMIT stops the walk. Cheaper than reading the driver's
 * index rows when most rows of the type match (each row read is then a match, and a `resource`
 * row read in order costs less than one probed per index row). Each resource is seen once: no
 * second statement. Its columns are the driver form's (`n`, `found`).
 */
export function walkCountSql(where: string[], upTo: number): string {
  const checked = where.map((w) => (/\bEXISTS\b/.test(w) ? `(SELECT ${w})` : w));
  return `SELECT count(*)::int AS n, count(*)::int AS found FROM (SELECT 1 FROM resource r WHERE ${checked.join(' AND ')} LIMIT ${upTo}) AS walked`;
}

export type CountForm = 'driver' | 'walk';

interface Chosen {
  form: CountForm;
  at: number;
}

/** How long a choice is kept (ms): statistics change slowly, the choice only moves the cost. */
const CHOICE_MS = 60_000;
const MAX_CHOICES = 500;
const choices = new Map<string, Chosen>();

/**
 * Which form of the bounded COUNT reads less, by the planner's estimates: of the rows of the type
 * the caller sees (`baseSql`) and of the search's matches (`whereSql`), read by ONE `EXPLAIN` of
 * both side by side (`UNION ALL`: each an input of the Append node with its own row estimate).
 * When at least {@link WALK_SHARE} of the type's rows match, walking the type reads at most
 * 1 / that rows per match counted, each a `resource` row read in order and one probe, where the
 * driver reads an index row and probes its `resource` row by primary key — so the walk;
 * otherwise the driver. The answer is the same either way; only the cost differs, so the choice
 * is kept for the same statement and values for a minute (a search repeated, a result paged)
 * and costs no statement then. (Comparing the two forms' own costs does not work: the planner
 * gives a criterion in a per-row sub-select a default selectivity, whatever its statistics.)
 */
export async function chooseCountForm(
  query: (sql: string, values: unknown[]) => Promise<{ rows: Array<Record<string, unknown>> }>,
  baseSql: string,
  whereSql: string,
  values: unknown[],
  now = Date.now(),
): Promise<CountForm> {
  const key = `${whereSql}\u0000${JSON.stringify(values)}`;
  const known = choices.get(key);
  if (known && now - known.at < CHOICE_MS) return known.form;
  const res = await query(`EXPLAIN (FORMAT JSON) (SELECT 1 FROM resource r WHERE ${baseSql}) UNION ALL (SELECT 1 FROM resource r WHERE ${whereSql})`, values);
  const cell = Object.values(res.rows[0] ?? {})[0];
  const plan = (typeof cell === 'string' ? JSON.parse(cell) : cell) as Array<{ Plan?: PlanRows }> | undefined;
  const [seen, matching] = appendInputs(plan?.[0]?.Plan);
  const form: CountForm = seen !== undefined && matching !== undefined && seen > 0 && matching >= WALK_SHARE * seen ? 'walk' : 'driver';
  if (choices.size >= MAX_CHOICES) choices.clear();
  choices.set(key, { form, at: now });
  return form;
}

/** The share of a type's rows matching from which the COUNT walks the type. */
const WALK_SHARE = 0.5;

/** Forgets the choices made (tests: each choice asked of the planner again). */
export function forgetCountForms(): void {
  choices.clear();
}

interface PlanRows {
  'Plan Rows'?: number;
  Plans?: PlanRows[];
}

/** The row estimates of the two inputs of the plan's Append (the first node with two inputs). */
function appendInputs(plan: PlanRows | undefined): [number | undefined, number | undefined] {
  let node = plan;
  while (node && (node.Plans?.length ?? 0) === 1) node = node.Plans?.[0];
  const [a, b] = node?.Plans ?? [];
  return [a?.['Plan Rows'], b?.['Plan Rows']];
}
