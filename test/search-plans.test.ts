import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Queryable } from '../src/core/database.js';
import { buildSearch, runSearch } from '../src/storage/search/query/run-search.js';
import { chooseCountForm, forgetCountForms } from '../src/storage/search/query/bounded-count.js';
import { DEFAULT_SEARCH_LIMITS } from '../src/storage/search/query/limits.js';
import { scopeFor } from '../src/storage/scope.js';
import { drivers, startServer, type TestServer } from './harness.js';

/**
 * The query plans of the common searches (docs/rest.md#query-plans), read with `EXPLAIN (FORMAT
 * JSON)` of the SQL the search builder emits (`buildSearch`, not run), on both drivers (PGlite is
 * PostgreSQL too), with sequential and bitmap scans, hash and merge joins off so a small population plans as a
 * large one would (sorting stays on). Each case names the index that gives its plan; the case is also explained with that
 * index dropped (in a transaction rolled back), and must then fail its check — so a check that
 * cannot fail, or an index that does not matter, is caught here.
 */

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  'Plan Rows'?: number;
  Strategy?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

/** The plan as indented lines (node type, index or table, estimated rows), for failure messages. */
function outline(plan: PlanNode, depth = 0): string {
  const on = plan['Index Name'] ?? plan['Relation Name'];
  const self = `${'  '.repeat(depth)}${plan['Node Type']}${on ? ` on ${on}` : ''} (${String(plan['Plan Rows'])} rows)`;
  return [self, ...(plan.Plans ?? []).map((child) => outline(child, depth + 1))].join('\n');
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

const SCANS = new Set(['Seq Scan', 'Index Scan', 'Index Only Scan', 'Bitmap Index Scan', 'Bitmap Heap Scan']);
const SORTS = new Set(['Sort', 'Incremental Sort']);

/**
 * A scan that reads every live row of a type: a sequential scan of anything, or `resource` read
 * by any index but its primary key probed per match (resource_type_updated, resource_project).
 */
function wholeType(n: PlanNode): boolean {
  if (n['Node Type'] === 'Seq Scan') return true;
  if (!SCANS.has(n['Node Type']) || n['Relation Name'] !== 'resource') return false;
  return n['Index Name'] !== 'resource_pkey' || !/\bid = /.test(n['Index Cond'] ?? '');
}

/** What is wrong with a plan for the kind of search (undefined: nothing). */
type Check = (plan: PlanNode) => string | undefined;

/** The page is read in index order: no sort anywhere, no sequential scan. */
const ordered: Check = (plan) => {
  const all = nodes(plan);
  if (all.some((n) => n['Node Type'] === 'Seq Scan')) return 'a sequential scan';
  const sort = all.find((n) => SORTS.has(n['Node Type']));
  return sort ? `a ${sort['Node Type']} node` : undefined;
};

/**
 * The matches are found through `index` (a lookup of the parameter's value) and only they are
 * sorted: no sort above a scan of the whole type, no sequential scan.
 */
const matchesThrough =
  (index: string): Check =>
  (plan) => {
    const all = nodes(plan);
    if (all.some((n) => n['Node Type'] === 'Seq Scan')) return 'a sequential scan';
    if (!all.some((n) => n['Index Name'] === index)) return `no scan of ${index}`;
    const sorted = all.filter((n) => SORTS.has(n['Node Type'])).flatMap(nodes);
    const walk = sorted.find(wholeType);
    return walk ? `a sort above a scan of every ${walk['Relation Name']} row (${walk['Index Name'] ?? walk['Node Type']})` : undefined;
  };

/** Nodes that read all their input before giving a row: a hash, a hashed aggregate, a sort, a merge's sorted inputs. */
function blocking(n: PlanNode): boolean {
  return ['Hash', 'Hash Join', 'Merge Join', 'Materialize', 'Bitmap Index Scan', ...SORTS].includes(n['Node Type']) || n.Strategy === 'Hashed';
}

/**
 * The bounded COUNT streams from the criterion's index (docs/rest.md#query-plans): its rows
 * come from `index` in a scan the Limit stops, each checked by probes of one resource (its
 * primary key, other tables by id); nothing under the Limit hashes or sorts every match first.
 */
const countedThrough =
  (index: string): Check =>
  (plan) => {
    // Above the Limit, at most its rows are sorted (count(DISTINCT id)); below it nothing may wait for every match.
    const all = nodes(plan).filter((n) => n['Node Type'] === 'Limit').flatMap(nodes);
    if (all.length === 0) return 'no Limit';
    const stop = all.find(blocking);
    if (stop) return `a ${stop['Node Type']}${stop.Strategy ? ` (${stop.Strategy})` : ''} node`;
    if (!all.some((n) => n['Index Name'] === index)) return `no scan of ${index}`;
    const walk = all.find((n) => SCANS.has(n['Node Type']) && n['Index Name'] !== index && !/\bid = /.test(n['Index Cond'] ?? ''));
    return walk ? `a scan of ${walk['Relation Name']} not by id (${walk['Index Name'] ?? walk['Node Type']})` : undefined;
  };

const LOINC = 'http://loinc.org';
const CASES: Array<{ search: string; check: Check; index: string }> = [
  // The default order (_lastUpdated, id) and `_sort=_lastUpdated`: the type's live rows in time order.
  { search: 'Observation?_count=10', check: ordered, index: 'resource_type_updated' },
  { search: 'Observation?_sort=-_lastUpdated&_count=10', check: ordered, index: 'resource_type_updated' },
  // One token code or reference target in the default order (or by _lastUpdated): the rows of
  // that value in its lookup index, which orders them by the last_updated they carry.
  { search: `Observation?code=${LOINC}|8302-2&_sort=_lastUpdated&_count=10`, check: ordered, index: 'search_token_lookup' },
  { search: `Observation?code=${LOINC}|8302-2&_sort=-_lastUpdated&_count=10`, check: ordered, index: 'search_token_lookup' },
  { search: 'Patient?identifier=https://example.org/mrn|MRN100007', check: ordered, index: 'search_token_lookup' },
  { search: 'Observation?subject=Patient/plan-p2&_count=10', check: ordered, index: 'search_reference_lookup' },
  { search: `Observation?subject=Patient/plan-p2&code=${LOINC}|8302-2`, check: ordered, index: 'search_reference_lookup' },
  { search: `Observation?subject=Patient/plan-p2&_count=5&_cursor=${Buffer.from(JSON.stringify(['2020-01-01T00:00:00.000000Z', 'plan-o2-1-1'])).toString('base64url')}`, check: ordered, index: 'search_reference_lookup' },
  // A next page by keyset (`_cursor`): the index read from the cursor's key on, no OFFSET.
  { search: `Observation?_count=10&_cursor=${Buffer.from(JSON.stringify(['2020-01-01T00:00:00.000000Z', 'plan-o1-1-1'])).toString('base64url')}`, check: ordered, index: 'resource_type_updated' },
  // `_sort` by a parameter: its sort rows in index order.
  { search: 'Patient?_sort=family&_count=10', check: ordered, index: 'search_string_sort' },
  { search: 'Patient?_sort=-family&_count=10', check: ordered, index: 'search_string_sort' },
  { search: 'Encounter?_sort=-date&_count=10', check: ordered, index: 'search_date_high' },
  { search: 'Encounter?_sort=date&_count=10', check: ordered, index: 'search_date_lookup' },
  // Selective searches: the matches through the value's lookup index, only they sorted.
  { search: 'Patient?family=Smith&_count=10', check: matchesThrough('search_string_lookup'), index: 'search_string_lookup' },
  { search: 'Patient?name=smith&_count=10', check: matchesThrough('search_string_lookup'), index: 'search_string_lookup' },
  { search: 'Encounter?subject=Patient/plan-p7&_sort=-date', check: matchesThrough('search_reference_lookup'), index: 'search_reference_lookup' },
  { search: 'Patient?family=Smith&_sort=family&_count=10', check: matchesThrough('search_string_lookup'), index: 'search_string_lookup' },
];

/**
 * The bounded COUNT (a page with more after it, no `_total`) of searches with many matches. (A
 * date range is an OR of bounds: read through a BitmapOr of its indexes, or here, with bitmaps
 * off, the dates in id order; not pinned.)
 */
const COUNTS: Array<{ search: string; index: string }> = [
  { search: `Observation?code=${LOINC}|8302-2`, index: 'search_token_lookup' },
  { search: 'Patient?name=smith', index: 'search_string_lookup' },
  { search: 'Observation?subject=Patient/plan-p2', index: 'search_reference_lookup' },
  { search: `Observation?code=${LOINC}|8302-2&status=final`, index: 'search_token_lookup' },
];

const FAMILIES = ['Smith', 'Garcia', 'Nguyen', 'Okafor', 'Kowalski', 'Haddad', 'Larsen', 'Moreau', 'Tanaka', 'Silva'];
const VITALS = ['8302-2', '29463-7', '8867-4', '9279-1', '8310-5'];

/** A small Synthea-shaped population: per patient 4 Encounters, per Encounter 3 Observations. */
function population(patients: number): unknown[] {
  const out: unknown[] = [];
  for (let p = 0; p < patients; p++) {
    const pid = `plan-p${p}`;
    out.push({
      resourceType: 'Patient',
      id: pid,
      identifier: [{ system: 'https://example.org/mrn', value: `MRN${100000 + p}` }],
      name: [{ family: FAMILIES[p % FAMILIES.length], given: ['Ava'] }],
    });
    for (let e = 0; e < 4; e++) {
      const start = new Date(Date.UTC(2010 + ((p + e) % 14), e % 12, 1)).toISOString();
      out.push({ resourceType: 'Encounter', id: `plan-e${p}-${e}`, status: 'finished', class: { code: 'AMB' }, subject: { reference: `Patient/${pid}` }, period: { start, end: start } });
      for (let o = 0; o < 3; o++) {
        out.push({
          resourceType: 'Observation',
          id: `plan-o${p}-${e}-${o}`,
          status: 'final',
          code: { coding: [{ system: LOINC, code: VITALS[(e * 3 + o) % VITALS.length] }] },
          subject: { reference: `Patient/${pid}` },
          effectiveDateTime: start,
        });
      }
    }
  }
  return out;
}

async function explain(q: Queryable, sql: string, values: unknown[], analyze = false): Promise<PlanNode> {
  const res = await q.query<Record<string, unknown>>(`EXPLAIN (${analyze ? 'ANALYZE, ' : ''}FORMAT JSON) ${sql}`, values);
  const cell = Object.values(res.rows[0] ?? {})[0];
  const plan = (typeof cell === 'string' ? JSON.parse(cell) : cell) as Array<{ Plan: PlanNode }>;
  return plan[0].Plan;
}

const ROLLBACK = new Error('rolled back');

for (const driver of drivers) {
  describe(`search query plans (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver);
      const resources = population(120);
      for (let i = 0; i < resources.length; i += 100) {
        const entry = resources.slice(i, i + 100).map((resource) => {
          const r = resource as { resourceType: string; id: string };
          return { resource: r, request: { method: 'PUT', url: `${r.resourceType}/${r.id}` } };
        });
        const res = await server.fhir('POST', '', { body: { resourceType: 'Bundle', type: 'transaction', entry } });
        assert.equal(res.status, 200, res.text);
      }
      await server.app.db.query('VACUUM ANALYZE');
    });
    after(() => server.stop());

    if (driver === 'pg') {
      test('JIT compiling is off on the server\'s connections (a search paid ~70 ms of it for a few ms of work)', async () => {
        const { rows } = await server.app.db.query<{ jit: string }>('SHOW jit');
        assert.equal(rows[0].jit, 'off');
      });
    }

    /**
     * The plan of the search's page (or its COUNT of at most `count` matches; `again`: its second
     * statement), seqscan off, with `drop` dropped first, run when `analyze`; always rolled back.
     */
    const scopeOf = () => scopeFor({ projectId: server.projectId, superAdmin: false, projectAdmin: false, membershipId: server.member?.membershipId });

    async function planOf(search: string, options: { drop?: string; count?: number; again?: boolean; analyze?: boolean } = {}): Promise<PlanNode> {
      const [type, qs] = search.split('?');
      const scope = scopeOf();
      let plan: PlanNode | undefined;
      await server.app.db
        .transaction(async (tx) => {
          // A table of a few pages is read whole (sequential or bitmap scans, hash and merge
          // joins) whatever the query; on the large tables these plans are for, a LIMIT is
          // answered by index probes. Sorting stays enabled: a plan that sorts shows it.
          for (const method of ['seqscan', 'bitmapscan', 'hashjoin', 'mergejoin']) await tx.query(`SET LOCAL enable_${method} = off`);
          if (options.drop) await tx.query(`DROP INDEX ${options.drop}`);
          const built = await buildSearch(tx, scope, { resourceType: type, params: [...new URLSearchParams(qs)] });
          const count = options.count === undefined ? undefined : built.count(options.count);
          const statement = count ? { sql: (options.again ? count.again : undefined) ?? count.sql, values: count.values } : built.page;
          plan = await explain(tx, statement.sql, statement.values, options.analyze);
          throw ROLLBACK;
        })
        .catch((err: unknown) => {
          if (err !== ROLLBACK) throw err;
        });
      return plan as PlanNode;
    }

    for (const { search, check, index } of CASES) {
      test(`${search}: ${check === ordered ? 'read in index order' : 'matches read through their index'} (${index}); without it the check fails`, async () => {
        const plan = await planOf(search);
        assert.equal(check(plan), undefined, outline(plan));
        const without = await planOf(search, { drop: index });
        assert.notEqual(check(without), undefined, `still passes without ${index}:\n${outline(without)}`);
      });
    }

    for (const { search, index } of COUNTS) {
      test(`the bounded COUNT of ${search} streams from ${index} (no hash or sort of every match); without it the check fails`, async () => {
        for (const again of [false, true]) {
          const plan = await planOf(search, { count: 1001, again });
          assert.equal(countedThrough(index)(plan), undefined, outline(plan));
          const without = await planOf(search, { count: 1001, again, drop: index });
          assert.notEqual(countedThrough(index)(without), undefined, `still passes without ${index}:\n${outline(without)}`);
        }
      });
    }

    /** The form of the bounded COUNT of at most `upTo` matches of `search` the planner's estimates pick (normal planner settings). */
    async function formOf(search: string, upTo: number): Promise<string> {
      const [type, qs] = search.split('?');
      const built = await buildSearch(server.app.db, scopeOf(), { resourceType: type, params: [...new URLSearchParams(qs)] });
      forgetCountForms(); // the other driver's server may have asked the same
      const { whereSql, driverSql } = built;
      assert.ok(driverSql);
      return chooseCountForm((sql, values) => server.app.db.query(sql, values), { whereSql, driverSql }, built.whereValues, upTo);
    }

    test('the bounded COUNT is left to the planner when its driver\'s rows are estimated few (at most twice the bound), and read from the driver otherwise', async () => {
      // status=final: all 1,440 Observations; code 8302-2: 288 of them; subject plan-p2: 12.
      assert.equal(await formOf('Observation?status=final', 5), 'driver');
      assert.equal(await formOf('Observation?status=final', 1001), 'planned');
      assert.equal(await formOf(`Observation?code=${LOINC}|8302-2`, 5), 'driver');
      assert.equal(await formOf(`Observation?code=${LOINC}|8302-2`, 1001), 'planned');
      assert.equal(await formOf('Observation?subject=Patient/plan-p2', 100), 'planned');
    });

    test('both forms of the bounded COUNT give the same figures', async () => {
      for (const search of ['Observation?status=final', `Observation?code=${LOINC}|8302-2`, 'Patient?name=smith', 'Encounter?date=ge2015-01-01', 'Observation?subject=Patient/plan-p2&status=final']) {
        const [type, qs] = search.split('?');
        const built = await buildSearch(server.app.db, scopeOf(), { resourceType: type, params: [...new URLSearchParams(qs)] });
        for (const upTo of [5, 30, 100_000]) {
          const driver = built.count(upTo);
          const first = (await server.app.db.query<{ n: number; found: number }>(driver.sql, driver.values)).rows[0];
          const byDriver = driver.again && first.found === upTo && first.n < upTo ? (await server.app.db.query<{ n: number }>(driver.again, driver.values)).rows[0].n : first.n;
          const planned = built.count(upTo, 'planned');
          const byPlanner = (await server.app.db.query<{ n: number }>(planned.sql, planned.values)).rows[0].n;
          const all = built.count();
          const every = (await server.app.db.query<{ n: number }>(all.sql, all.values)).rows[0].n;
          assert.equal(byPlanner, byDriver, `${search} up to ${upTo}`);
          assert.equal(byPlanner, Math.min(every, upTo), `${search} up to ${upTo}`);
        }
      }
    });

    test('the bounded COUNT reads about as many rows as it counts, however many match', async () => {
      // 288 Observations have the code; counting 25 of them reads 25 token rows and probes 25
      // resources (the form before read the Observations in order until 25 matched, ~125).
      const plan = await planOf(`Observation?code=${LOINC}|8302-2`, { count: 25, analyze: true });
      const read = nodes(plan)
        .filter((n) => SCANS.has(n['Node Type']))
        .reduce((sum, n) => sum + ((n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0)) * (n['Actual Loops'] ?? 1), 0);
      assert.ok(read <= 3 * 25, `${read} rows read to count 25:\n${outline(plan)}`);
    });

    test('the bounded COUNT is exact up to its bound when a resource has several matching rows (name: family and text)', async () => {
      const scope = scopeOf();
      const count = async (maxCounted: number) => {
        const result = await runSearch(server.app.db, scope, { resourceType: 'Patient', params: [['name', 'smith'], ['_count', '1']] }, { ...DEFAULT_SEARCH_LIMITS, maxCounted });
        return [result.total, result.totalKind];
      };
      // 12 Smiths, 24 matching name rows: the first 21 rows are of fewer than 21 Patients, so
      // the count is taken again, one row per Patient.
      assert.deepEqual(await count(20), [12, 'exact']);
      assert.deepEqual(await count(12), [12, 'exact']);
      assert.deepEqual(await count(11), [2, 'lower']);
      assert.deepEqual(await count(3), [2, 'lower']);
    });
  });
}
