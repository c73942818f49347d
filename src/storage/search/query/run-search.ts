import type { Resource } from '@medplum/fhirtypes';
import type { Queryable } from '../../../core/database.js';
import type { ResourceRepository, SearchQuery, SearchResult } from '../../../core/repository.js';
import type { SearchTerminology } from '../../../core/search.js';
import { resolveTermCriteria, termCriteria } from './terminology.js';
import type { Scope } from '../../../core/scope.js';
import { CONTROL_PARAMETERS, orderBySql, parseControls } from './controls.js';
import { filterSql, splitModifier } from './filters.js';
import { loadIncluded, parseDirectives } from './includes.js';
import { DEFAULT_SEARCH_LIMITS, checkSearchLimits, type SearchLimits } from './limits.js';
import { SqlParams } from './sql-params.js';
import { sortTable, sortedPageSql } from './sorted-page.js';
import { KEY_COLUMNS, afterCursorSql, encodeCursor, keysetOf, type Keyset } from './keyset.js';
import { accessSql } from './access.js';
import { boundedCountSql, chooseCountForm, driverOf, driverRowsSql, explainPlan, knownFewMatches, plannedCountSql, type CountCandidate, type CountForm } from './bounded-count.js';
import { compartmentSql, compartmentTypes } from './compartment.js';
import { FhirError, badRequest } from '../../../fhir/outcome.js';
import { COLUMN_PARAMETERS } from '../parameters.js';

/** `SearchQuery.resourceType` for "every type of the compartment". */
const ANY_TYPE = '*';

/**
 * The types a search covers: its type, for `*` the compartment's types (narrowed by `types`),
 * or the `types` of a system search.
 */
function searchedTypes(query: SearchQuery): string[] {
  if (query.resourceType !== ANY_TYPE) return [query.resourceType];
  if (!query.compartment && query.types !== undefined && query.types.length > 0) return query.types;
  if (!query.compartment) throw badRequest('A search of every resource type needs a compartment');
  const all = compartmentTypes(query.compartment.resourceType);
  const wanted = query.compartment.types;
  return wanted ? all.filter((t) => wanted.includes(t)) : all;
}

/**
 * The SQL of one search, built but not run (`buildSearch`): the page statement, the WHERE it
 * shares with the COUNT, and the COUNT (bounded by `upTo` rows, or every match). Tests read the
 * plans of these statements with `EXPLAIN` (test/search-plans.test.ts).
 */
export interface SearchStatements {
  controls: ReturnType<typeof parseControls>;
  directives: ReturnType<typeof parseDirectives>;
  types: string[];
  whereSql: string;
  whereValues: unknown[];
  /** The page: its rows are `content`, one more than `_count` (whether a next page exists). */
  page: { sql: string; values: unknown[] };
  /**
   * The same page with every match counted (`matched`, `count(*) OVER ()`), when its matches are
   * read through a filter's index and sorted anyway (not an index-order page, not from a cursor):
   * for a search whose matches the planner expects to be few (runSearch).
   */
  countedPage?: { sql: string; values: unknown[] };
  /** The page's keyset when its order allows keyset paging (its rows then have `key_time`, `key_id`). */
  keyset?: Keyset;
  /**
   * `SELECT count(*)::int AS n` of the matches, at most `upTo` when given. A bounded COUNT read
   * from a criterion's index (bounded-count.ts) also gives `found`, and when `found` is `upTo`
   * but `n` is less, `again` is the statement that answers. `form: 'planned'` counts with the
   * search's own WHERE instead (bounded-count.ts `plannedCountSql`; the choice: `chooseCountForm`).
   */
  count(upTo?: number, form?: CountForm): { sql: string; values: unknown[]; again?: string };
  /** The driving criterion's index rows (bounded-count.ts), when the bounded COUNT has one (and so two forms). */
  driverSql?: string;
}

/**
 * Builds the statements of a search: the type, not deleted, the caller's visibility, and an
 * EXISTS per parameter (parameters ANDed, comma values ORed inside), ordered by the `_sort` keys.
 * The terminology modifiers are answered first (asynchronously, with `q`), then read by the builder.
 */
export async function buildSearch(
  q: Queryable,
  scope: Scope,
  query: SearchQuery,
  limits: SearchLimits = DEFAULT_SEARCH_LIMITS,
  engines: { terminology?: SearchTerminology; repo?: ResourceRepository } = {},
): Promise<SearchStatements> {
  checkSearchLimits(query.params, limits);
  const type = query.resourceType;
  const controlPairs = query.params.filter(([name]) => CONTROL_PARAMETERS.has(splitModifier(name)[0]));
  const controls = parseControls(type, controlPairs);
  const directives = parseDirectives(type, controlPairs);

  const p = new SqlParams(scope, accessSql);
  const types = searchedTypes(query);
  const system = type === ANY_TYPE && !query.compartment; // GET [base]?_type=A,B
  const filters = query.params.filter(([name]) => !CONTROL_PARAMETERS.has(splitModifier(name)[0]));
  const criteria = type !== ANY_TYPE ? termCriteria(type, filters) : system ? types.flatMap((t) => termCriteria(t, filters)) : [];
  if (criteria.length > 0) p.terms = await resolveTermCriteria(q, criteria, limits.maxCodes, engines.terminology, engines.repo);
  const typeSql = types.length === 1 ? `r.resource_type = ${p.add(types[0])}` : `r.resource_type = ANY(${p.add(types)}::text[])`;
  const where = [typeSql, 'NOT r.deleted', 'r.version_id > 0', p.visibility('r', 's', types.length === 1 ? types[0] : undefined)];
  if (query.compartment) where.push(compartmentSql(p, 'r', types, query.compartment));
  // The criteria a bounded COUNT can read its matches from (bounded-count.ts).
  const candidates: CountCandidate[] = [];
  for (const [name, value] of query.params) {
    if (CONTROL_PARAMETERS.has(splitModifier(name)[0])) continue;
    if (system && !COLUMN_PARAMETERS.has(splitModifier(name)[0])) {
      const sql = acrossTypesSql(p, types, name, value);
      if (sql !== undefined) where.push(sql);
      continue;
    }
    if (type === ANY_TYPE && !COLUMN_PARAMETERS.has(splitModifier(name)[0])) {
      throw badRequest(`Search parameter ${splitModifier(name)[0]} is not supported across resource types`);
    }
    const sql = filterSql(p, { alias: 'r', type }, name, value);
    if (sql === undefined) continue;
    where.push(sql);
    const criterion = p.indexed.get(sql.slice(1, -1));
    if (criterion && type !== ANY_TYPE) candidates.push({ sql, criterion });
  }
  const whereSql = where.join(' AND ');
  const whereValues = [...p.values]; // ORDER BY adds its own values, which COUNT must not get
  // One row more than the page: whether another page follows is known without a COUNT.
  const limit = controls.count + 1;
  // The sort's index drives the page when nothing narrower could: no filter, or only date filters
  // on the sorted date (its range is where the walk starts or stops). A search with another
  // filter finds its matches through that filter's index and sorts them (sorted-page.ts).
  const codes = filters.map(([name]) => splitModifier(name)[0]);
  const sortCode = controls.sort.length === 1 ? controls.sort[0].code : undefined;
  const alone = codes.length === 0 || (codes.every((c) => c === sortCode) && sortCode !== undefined && sortTable(type, sortCode) === 'date');
  const sorted = types.length === 1 && alone && !query.compartment ? sortedPageSql(p, types[0], controls.sort, whereSql, limit, controls.offset) : undefined;
  // Keyset paging: a `_cursor` (made by the previous page) replaces the OFFSET by a condition the
  // order's index starts from; the COUNT is of the whole search, without it.
  const keyset = sorted === undefined && type !== ANY_TYPE ? keysetOf(controls.sort) : undefined;
  if (controls.cursor !== undefined && !keyset) throw badRequest(`Invalid value '${controls.cursor.slice(0, 100)}' for _cursor (a next link's cursor, for the same _sort)`);
  // The page in the order of the time of the last change, driven by one token or reference value:
  // read from the rows of that value in its lookup index, which orders them by time (`ordered`).
  const driver = driverOf(candidates);
  const inOrder = keyset?.columns[0] === 'last_updated' && driver?.criterion.ordered ? driver : undefined;
  const cursorSql = controls.cursor !== undefined && keyset ? afterCursorSql(p, keyset, controls.cursor, inOrder?.criterion.alias) : undefined;
  const from = cursorSql ? `${whereSql} AND ${cursorSql}` : whereSql;
  const offset = controls.cursor !== undefined ? 0 : controls.offset;
  const orderBy = sorted === undefined ? orderBySql(p, type, controls.sort) : undefined; // adds its values once
  const select = (counted: string) => `SELECT r.content${keyset ? `, ${KEY_COLUMNS}` : ''}${counted} FROM resource r WHERE ${from} ORDER BY ${orderBy} LIMIT ${limit} OFFSET ${offset}`;
  const pageSql = sorted ?? (inOrder && keyset ? orderedPageSql(inOrder, where, cursorSql, keyset.descending, limit, offset) : select(''));
  return {
    controls,
    directives,
    types,
    whereSql,
    whereValues,
    page: { sql: pageSql, values: p.values },
    countedPage:
      sorted === undefined && controls.cursor === undefined
        ? { sql: select(', count(*) OVER ()::int AS matched'), values: p.values } // no cursor: `from` is the WHERE (no value of a cursor unused)
        : undefined,
    keyset,
    driverSql: driver ? driverRowsSql(driver) : undefined,
    count(upTo?: number, form: CountForm = 'driver') {
      if (driver && upTo !== undefined && form === 'planned') return { sql: plannedCountSql(whereSql, upTo), values: whereValues };
      if (driver && upTo !== undefined) return { ...boundedCountSql(driver, where, upTo), values: whereValues };
      const from = upTo === undefined ? `resource r WHERE ${whereSql}` : `(SELECT 1 FROM resource r WHERE ${whereSql} LIMIT ${upTo}) AS counted`;
      return { sql: `SELECT count(*)::int AS n FROM ${from}`, values: whereValues };
    },
  };
}

/**
 * The page read in time order from the driving criterion's rows (docs/rest.md#query-plans): the
 * rows of its one token code or reference target in its lookup index, which orders them by the
 * `last_updated, id` they carry (migration 625), forwards or backwards; each row's resource
 * probed by its primary key and checked against the rest of the search (`where` but the
 * driver's EXISTS); a resource with several rows of that value (a code in two codings) once.
 * The LIMIT stops the read: a subject's page of 10 reads about 11 rows however many it has.
 */
function orderedPageSql(driver: CountCandidate, where: string[], cursorSql: string | undefined, descending: boolean, limit: number, offset: number): string {
  const { table, alias: x, rows } = driver.criterion;
  const rest = where.filter((w) => w !== driver.sql);
  const dir = descending ? 'DESC' : 'ASC';
  const conditions = [rows, ...rest, ...(cursorSql ? [cursorSql] : [])].join(' AND ');
  return (
    `SELECT DISTINCT ON (${x}.last_updated, ${x}.id) r.content, ${KEY_COLUMNS} FROM search_${table} ${x} ` +
    `JOIN resource r ON r.resource_type = ${x}.resource_type AND r.id = ${x}.id WHERE ${conditions} ` +
    `ORDER BY ${x}.last_updated ${dir}, ${x}.id ${dir} LIMIT ${limit} OFFSET ${offset}`
  );
}

/**
 * Runs a search (`buildSearch`) as ONE query over `resource r`.
 * The total comes from the page itself when the page is the last one (a row beyond the page
 * is read to know), else from a COUNT with the same WHERE — not run for `_total=none`, and
 * replaced by the planner's estimate for `_total=estimate` (docs/rest.md#result-parameters).
 */
export async function runSearch(...args: Parameters<typeof buildSearch>): Promise<SearchResult> {
  const [q, scope, query] = args;
  return (await answerSearch(q, scope, query, args[3] ?? DEFAULT_SEARCH_LIMITS, await buildSearch(...args))).result;
}

/** A search's answer, with the JSON text of each of its resources (what the search answer cache keeps). */
export interface SearchAnswer {
  result: SearchResult;
  /** The JSON text of `result.resources`, in order: the matches' rows as read, the included resources serialised. */
  texts(): string[];
}

/** Runs the statements of a built search (`buildSearch`): see `runSearch`. */
export async function answerSearch(q: Queryable, scope: Scope, query: SearchQuery, limits: SearchLimits, built: SearchStatements): Promise<SearchAnswer> {
  const { controls, directives, types, whereSql, whereValues } = built;
  const type = query.resourceType;
  const countTotal = async (upTo?: number): Promise<number> => {
    // A bounded COUNT with a driving criterion has two forms; the planner's estimates pick one.
    const { driverSql } = built;
    const form = upTo !== undefined && driverSql !== undefined ? await chooseCountForm((sql, values) => q.query(sql, values), { whereSql, driverSql }, whereValues, upTo) : 'driver';
    const count = built.count(upTo, form);
    const row = (await q.query<{ n: number; found?: number }>(count.sql, count.values)).rows[0];
    if (count.again && upTo !== undefined && row?.found === upTo && row.n < upTo) return (await q.query<{ n: number }>(count.again, count.values)).rows[0]?.n ?? 0;
    return row?.n ?? 0;
  };

  if (controls.summaryCount || controls.count === 0) {
    return { result: { resources: [], total: await countTotal(), count: 0, offset: controls.offset }, texts: () => [] };
  }
  // A search asked again whose matches the planner expects to be few (at most half the COUNT's
  // bound: bounded-count.ts) counts them in the page statement: a few matches are all read and
  // sorted for the page anyway. One statement instead of two; the first time, as below. Not for
  // more: the page would then be read in index order, stopping after `_count` rows (measured: an
  // Encounter date search of 1,560 matches was not cheaper counted in its page).
  const upTo = limits.maxCounted + 1;
  const counting = controls.total === undefined && built.countedPage && built.driverSql !== undefined && knownFewMatches(whereSql, whereValues, upTo, upTo / 2);
  const page = counting ? (built.countedPage as NonNullable<typeof built.countedPage>) : built.page;
  const rows = await q.query<{ content: string; key_time: string; key_id: string; matched?: number }>(page.sql, page.values);
  const matched = counting ? rows.rows[0]?.matched : undefined;
  const more = rows.rows.length > controls.count;
  const cursor = more && built.keyset ? encodeCursor(built.keyset, rows.rows[controls.count - 1]) : undefined;
  const pageRows = rows.rows.slice(0, controls.count);
  const matches = pageRows.map((row) => JSON.parse(row.content) as Resource);
  // A page read from a `_cursor` does not know how many matches came before it: its total is counted.
  const lastPage = !more && controls.cursor === undefined && (matches.length > 0 || controls.offset === 0);
  // `_total=none`: the answer has no total, so the COUNT is not run; the figure only tells the
  // paging links that a next page exists.
  // `_total=estimate`: the planner's row estimate of the same WHERE, never below what is known.
  const known = controls.offset + matches.length + (more ? 1 : 0);
  let total: number;
  let totalKind: SearchResult['totalKind'] = 'exact';
  if (lastPage) total = controls.offset + matches.length;
  else if (controls.total === 'none' && more) [total, totalKind] = [known, 'lower'];
  else if (controls.total === 'estimate') [total, totalKind] = [Math.max(known, await estimateTotal(q, whereSql, whereValues)), 'estimate'];
  else if (controls.total === 'accurate') total = await countTotal();
  else if (matched !== undefined) [total, totalKind] = matched > limits.maxCounted ? [known, 'lower'] : [matched, 'exact'];
  else {
    // No `_total`: an exact total costs at most `maxCounted` rows; a larger result has none
    // (docs/rest.md#search), so a common search never pays for counting a whole table.
    const counted = await countTotal(limits.maxCounted + 1);
    [total, totalKind] = counted > limits.maxCounted ? [known, 'lower'] : [counted, 'exact'];
  }
  // Across the types of a compartment (`*`, $everything) a resource of the compartment is a
  // match on some page: it is not repeated as an include on another.
  const compartment = query.compartment;
  const exclude = type === ANY_TYPE && compartment ? (ip: SqlParams, alias: string) => compartmentSql(ip, alias, types, compartment) : undefined;
  const included = directives.length > 0 ? await loadIncluded(q, scope, directives, matches, limits.maxIncluded, exclude) : [];
  return {
    result: {
      resources: [...matches, ...included],
      total,
      totalKind,
      count: controls.count,
      offset: controls.offset,
      cursor,
      modes: [...matches.map(() => 'match' as const), ...included.map(() => 'include' as const)],
    },
    texts: () => [...pageRows.map((row) => row.content), ...included.map((r) => JSON.stringify(r))],
  };
}

/**
 * One parameter of a system search (`_type=A,B`): each type's own condition, for rows of that
 * type. A parameter one of the types does not define (or support) → 400 naming the type, so
 * only the parameters common to the types can be used (R4 search.html#all).
 */
function acrossTypesSql(p: SqlParams, types: string[], name: string, value: string): string | undefined {
  const branches: string[] = [];
  for (const type of types) {
    let sql: string | undefined;
    try {
      sql = filterSql(p, { alias: 'r', type }, name, value);
    } catch (err) {
      if (!(err instanceof FhirError) || err.status !== 400) throw err;
      const why = err.outcome.issue?.[0]?.details?.text ?? 'not supported';
      throw badRequest(`Search parameter ${name.split(/[.:]/)[0]} cannot be used across the types of _type: for ${type}: ${why}`);
    }
    if (sql === undefined) return undefined;
    branches.push(`(r.resource_type = ${p.add(type)} AND ${sql})`);
  }
  return `(${branches.join(' OR ')})`;
}

/**
 * The planner's estimate of the rows matching `whereSql` (`EXPLAIN (FORMAT JSON)`, the same
 * on PostgreSQL and PGlite): it reads the table statistics, not the rows.
 */
async function estimateTotal(q: Queryable, whereSql: string, values: unknown[]): Promise<number> {
  const rows: unknown = (await explainPlan((sql, v) => q.query(sql, v), `SELECT 1 FROM resource r WHERE ${whereSql}`, values))?.['Plan Rows'];
  return typeof rows === 'number' && Number.isFinite(rows) ? Math.round(rows) : 0;
}
