import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Resource } from '@medplum/fhirtypes';
import type { Database, Queryable } from '../src/core/database.js';
import { validateResource } from '../src/fhir/validation/validate-resource.js';
import { BulkLoader, BulkLoadError } from '../src/storage/bulk-load.js';
import { storedNote } from '../src/core/repository.js';
import { drivers, startServer, type TestServer } from './harness.js';

/**
 * The bulk load writes its batches with COPY on both drivers (src/storage/copy-load.ts,
 * docs/rest.md#bulk-load): the same rows and search answers as the statement it replaced
 * (still used where a transaction cannot COPY), and each batch all or nothing — also when the
 * batches are prepared by worker threads (src/storage/bulk-prepare).
 */

/** Worker threads running the program's entry module, as `lattice import` starts them. */
const WORKERS = { entry: new URL('../src/main.ts', import.meta.url), threads: 2 };

const NARRATIVE = '<div xmlns="http://www.w3.org/1999/xhtml">Asthma with a back\\slash, a\ttab and "quotes"</div>';

/** Resources whose rows cover every index table and the characters COPY's text format escapes. */
function resources(prefix: string): Resource[] {
  return [
    {
      resourceType: 'Patient',
      id: `${prefix}-p1`,
      text: { status: 'generated', div: NARRATIVE },
      name: [{ family: 'Back\\slash', given: ['Tab\there', 'New\nline', 'Ñúñez "q"'] }],
      birthDate: '1980-02-03',
      identifier: [{ system: 'http://example.org/mrn', value: 'MRN\\1' }],
      telecom: [{ system: 'email', value: 'ann@example.org' }],
    },
    { resourceType: 'Patient', id: `${prefix}-p2`, name: [{ family: 'Plain', given: ['Ann'] }], gender: 'female' },
    {
      resourceType: 'Observation',
      id: `${prefix}-o1`,
      status: 'final',
      code: { coding: [{ system: 'http://loinc.org', code: '8302-2', display: 'Body height' }], text: 'height\r\nline' },
      subject: { reference: `Patient/${prefix}-p1` },
      effectivePeriod: { start: '2015-01-01T10:00:00+02:00', end: '2015-01-02' },
      valueQuantity: { value: 170.25, unit: 'cm', system: 'http://unitsofmeasure.org', code: 'cm' },
    },
    {
      resourceType: 'RiskAssessment',
      id: `${prefix}-r1`,
      status: 'final',
      subject: { reference: `Patient/${prefix}-p2` },
      prediction: [{ probabilityDecimal: 0.25 }],
    },
    { resourceType: 'Library', id: `${prefix}-l1`, status: 'active', type: { text: 'logic' }, url: 'http://example.org/Library/a\\b' },
  ] as Resource[];
}

const TABLES = ['resource', 'resource_history', 'search_string', 'search_token', 'search_reference', 'search_date', 'search_number', 'search_quantity', 'search_uri', 'search_text'];

/** `db` whose transactions record the tables they COPY into (`copies`), or cannot COPY at all (`copies` undefined: the statement path). */
function observed(db: Database, copies?: string[]): Database {
  const wrap = (tx: Queryable): Queryable => ({
    query: (sql, params) => tx.query(sql, params),
    ...(copies && tx.copyRows
      ? {
          copyRows: (table: string, columns: string[], text: string) => {
            copies.push(table);
            return (tx.copyRows as NonNullable<Queryable['copyRows']>)(table, columns, text);
          },
        }
      : {}),
  });
  return { ...db, transaction: ((fn: (tx: Queryable) => Promise<unknown>, options?: { timeoutMs?: number }) => db.transaction((tx) => fn(wrap(tx)), options)) as Database['transaction'] };
}

for (const driver of drivers) {
  describe(`bulk load through COPY (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver);
    });
    after(() => server.stop());

    const load = async (db: Database, items: Resource[], batchSize = 100, options: { workers?: typeof WORKERS; validate?: typeof validateResource } = {}) => {
      const loader = new BulkLoader(db, server.app.system, { projectId: server.projectId, batchSize, ...options });
      try {
        for (const [i, r] of items.entries()) await loader.add(r, `line ${i + 1}`);
        return await loader.finish();
      } finally {
        await loader.settle();
      }
    };
    /** Every row of `prefix`'s resources in every table, with the ids' prefix and last_updated taken out. */
    const snapshot = async (prefix: string) => {
      const out: Record<string, string[]> = {};
      for (const table of TABLES) {
        const res = await server.app.db.query<{ row: string }>(
          `SELECT (to_jsonb(t) - 'last_updated')::text AS row FROM ${table} t WHERE t.id LIKE $1`,
          [`${prefix}-%`],
        );
        // The ids' prefix and the stored meta.lastUpdated differ between the two loads.
        out[table] = res.rows.map((r) => r.row.split(prefix).join('X').replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, 'T')).sort();
      }
      return out;
    };
    /** Token and reference rows of `prefix`'s resources whose last_updated is not their resource's (migration 625). */
    const unstamped = async (prefix: string) =>
      (
        await server.app.db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM (SELECT resource_type, id, last_updated FROM search_token UNION ALL SELECT resource_type, id, last_updated FROM search_reference) x
           JOIN resource r USING (resource_type, id) WHERE r.id LIKE $1 AND x.last_updated IS DISTINCT FROM r.last_updated`,
          [`${prefix}-%`],
        )
      ).rows[0].n;
    const ids = async (path: string) => {
      const res = await server.fhir('GET', path, { token: server.adminToken });
      assert.equal(res.status, 200, res.text);
      return ((res.body.entry ?? []) as Array<{ resource: { id: string } }>).map((e) => e.resource.id.split('-').pop()).sort();
    };
    const searches = (prefix: string) => [
      `/Patient?family=back\\\\slash&_id=${prefix}-p1,${prefix}-p2`,
      `/Patient?given=%C3%91%C3%BA%C3%B1ez&_id=${prefix}-p1,${prefix}-p2`,
      `/Patient?identifier=http://example.org/mrn|MRN\\\\1&_id=${prefix}-p1`,
      `/Patient?_content=asthma&_id=${prefix}-p1,${prefix}-p2`,
      `/Observation?value-quantity=170.25||cm&subject=Patient/${prefix}-p1`,
      `/Observation?date=ge2015-01-01&subject=Patient/${prefix}-p1`,
      `/RiskAssessment?probability=0.25&subject=Patient/${prefix}-p2`,
      `/Library?url=http://example.org/Library/a\\\\b&_id=${prefix}-l1`,
    ];

    test('each batch is COPYed into the resource, history and index tables', async () => {
      const copies: string[] = [];
      assert.equal(await load(observed(server.app.db, copies), resources('cpy'), 3), 5);
      // Two batches (3 + 2 resources), each COPYed into resource and history, and into the
      // index tables it has rows for; search_text keeps its statement (a tsvector).
      assert.equal(copies.filter((t) => t === 'resource').length, 2, copies.join());
      assert.equal(copies.filter((t) => t === 'resource_history').length, 2, copies.join());
      for (const table of ['search_string', 'search_token', 'search_reference', 'search_date', 'search_quantity', 'search_number', 'search_uri']) {
        assert.ok(copies.includes(table), `${table} in ${copies.join()}`);
      }
      assert.ok(!copies.includes('search_text'));
    });

    test('COPY stores the same rows and answers the same searches as the statement path', async () => {
      assert.equal(await load(observed(server.app.db), resources('stm')), 5);
      assert.equal(await load(server.app.db, resources('cop')), 5);
      const [byStatement, byCopy] = [await snapshot('stm'), await snapshot('cop')];
      for (const table of TABLES) assert.ok(byCopy[table].length > 0, `${table} has rows`);
      assert.deepEqual(byCopy, byStatement);
      assert.equal(await unstamped('stm'), 0);
      assert.equal(await unstamped('cop'), 0);
      for (const [i, path] of searches('cop').entries()) {
        const found = await ids(path);
        assert.ok(found.length > 0, `${path} finds the loaded resource`);
        assert.deepEqual(found, await ids(searches('stm')[i]), path);
      }
      assert.deepEqual(await ids(`/Patient?_content=asthma&_id=cop-p1,cop-p2`), ['p1']);
    });

    test('batches prepared by worker threads store the same rows and answer the same searches as those prepared in this thread', async () => {
      assert.equal(await load(server.app.db, resources('thr'), 2), 5);
      const copies: string[] = [];
      assert.equal(await load(observed(server.app.db, copies), resources('wrk'), 2, { workers: WORKERS, validate: validateResource }), 5);
      assert.equal(copies.filter((t) => t === 'resource').length, 3, copies.join());
      const [inThread, inWorkers] = [await snapshot('thr'), await snapshot('wrk')];
      for (const table of TABLES) assert.ok(inWorkers[table].length > 0, `${table} has rows`);
      assert.deepEqual(inWorkers, inThread);
      assert.equal(await unstamped('wrk'), 0);
      for (const [i, path] of searches('wrk').entries()) {
        const found = await ids(path);
        assert.ok(found.length > 0, `${path} finds the loaded resource`);
        assert.deepEqual(found, await ids(searches('thr')[i]), path);
      }
    });

    test('with worker threads, the first refusal in input order is reported, after the batches before it are stored', async () => {
      const patient = (id: string, extra: object = {}) => ({ resourceType: 'Patient', id, name: [{ family: 'Order' }], ...extra }) as Resource;
      const count = async (prefix: string) =>
        (await server.app.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM resource WHERE id LIKE $1`, [`${prefix}-%`])).rows[0].n;
      const options = { workers: WORKERS, validate: validateResource };
      // An invalid resource (found by a worker) in the second batch comes before a duplicate id
      // (found when read) in the third: the invalid one is named; the first batch is stored.
      const items = [patient('ord-1'), patient('ord-2'), patient('ord-3'), patient('ord-4', { birthDate: 'yesterday' }), patient('ord-5'), patient('ord-5')];
      await assert.rejects(load(server.app.db, items, 2, options), (err: unknown) => {
        assert.ok(err instanceof BulkLoadError, String(err));
        assert.match(err.message, /^line 4: .*birthDate/);
        return true;
      });
      assert.equal(await count('ord'), 2);
      // Invalid and duplicate in the same batch: the invalid one, earlier in the input, is named.
      await assert.rejects(load(server.app.db, [patient('odd-1'), patient('odd-2', { birthDate: 'yesterday' }), patient('odd-1')], 10, options), /: line 2: .*birthDate/);
      assert.equal(await count('odd'), 0);
      // A dangling reference of the second batch: the first is stored.
      const dangling = { resourceType: 'Observation', id: 'dng-o', status: 'final', code: { text: 'x' }, subject: { reference: 'Patient/dng-none' } } as Resource;
      await assert.rejects(load(server.app.db, [patient('dng-1'), patient('dng-2'), dangling], 2, options), /line 3: reference Patient\/dng-none is to a resource neither/);
      assert.equal(await count('dng'), 2);
    });

    test('a batch is all or nothing: a duplicate id, a dangling reference, a row the database refuses mid-batch', async () => {
      const patient = (id: string) => ({ resourceType: 'Patient', id, name: [{ family: 'Whole' }] }) as Resource;
      const count = async (prefix: string) =>
        (await server.app.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM resource WHERE id LIKE $1`, [`${prefix}-%`])).rows[0].n;

      // A duplicate id in the second batch: refused before it is written; the first batch stays.
      await assert.rejects(load(server.app.db, [patient('dup-1'), patient('dup-2'), patient('dup-3'), patient('dup-3')], 2), (err: unknown) => {
        assert.ok(err instanceof BulkLoadError);
        assert.equal(err.message, 'line 4: Patient/dup-3 appears twice in the load');
        return true;
      });
      assert.equal(await count('dup'), 2);

      // A dangling reference in the second batch.
      const dangling = { resourceType: 'Observation', id: 'bad-o', status: 'final', code: { text: 'x' }, subject: { reference: 'Patient/bad-none' } } as Resource;
      await assert.rejects(load(server.app.db, [patient('bad-1'), patient('bad-2'), patient('bad-3'), dangling], 2), /line 4: reference Patient\/bad-none is to a resource neither/);
      assert.equal(await count('bad'), 2);

      // The database refuses the second batch's history COPY (a stray history row holds the key
      // of cut-4) after its resource rows were COPYed: the whole batch is rolled back, and so is
      // the third (on PostgreSQL written meanwhile; its reference to cut-3 would dangle).
      await server.app.db.query(
        `INSERT INTO resource_history (resource_type, id, version_id, last_updated, content) VALUES ('Patient', 'cut-4', 1, now(), '{}')`,
      );
      const third = { resourceType: 'Observation', id: 'cut-o', status: 'final', code: { text: 'x' }, subject: { reference: 'Patient/cut-3' } } as Resource;
      await assert.rejects(load(server.app.db, [patient('cut-1'), patient('cut-2'), patient('cut-3'), patient('cut-4'), patient('cut-5'), third], 2), /duplicate key/);
      assert.equal(await count('cut'), 2);
      const history = await server.app.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM resource_history WHERE id LIKE 'cut-%'`);
      assert.equal(history.rows[0].n, 3);
      const indexed = await server.app.db.query<{ n: number }>(`SELECT count(DISTINCT id)::int AS n FROM search_string WHERE id LIKE 'cut-%'`);
      assert.equal(indexed.rows[0].n, 2);
    });

    // PostgreSQL only: PGlite runs without fsync, so its batches commit as they always did.
    if (driver === 'pg') test('on PostgreSQL each batch commits without waiting for the disk, and the load ends with a commit that does', async () => {
      const statements: string[] = [];
      const recording: Database = {
        ...server.app.db,
        transaction: ((fn: (tx: Queryable) => Promise<unknown>, options?: { timeoutMs?: number }) =>
          server.app.db.transaction((tx) => {
            statements.push('BEGIN');
            return fn({
              query: (sql, params) => (statements.push(sql), tx.query(sql, params)),
              copyRows: (table: string, columns: string[], text: string) => (tx.copyRows as NonNullable<Queryable['copyRows']>)(table, columns, text),
            });
          }, options)) as Database['transaction'],
      };
      assert.equal(await load(recording, resources('dur'), 2), 5);
      const transactions = statements.join('\n').split('BEGIN\n').slice(1);
      // Three batches (2 + 2 + 1), each with its transaction's own setting; then the barrier.
      assert.equal(transactions.length, 4, transactions.map((t) => t.slice(0, 60)).join(' | '));
      for (const batch of transactions.slice(0, 3)) assert.match(batch, /^SET LOCAL synchronous_commit = off\n/);
      assert.equal(transactions[3].trim(), 'SELECT txid_current()');
    });

    if (driver === 'pg') test('a load that fails, and whose closing barrier fails too, does not claim its last batches are on disk', async () => {
      // The database lost at the load's end: the batches committed without waiting for the disk
      // cannot be confirmed, and the report says so instead of "N are stored".
      const failing: Database = {
        ...server.app.db,
        transaction: ((fn: (tx: Queryable) => Promise<unknown>, options?: { timeoutMs?: number }) =>
          server.app.db.transaction(
            (tx) =>
              fn({
                query: (sql, params) => (sql.includes('txid_current') ? Promise.reject(new Error('connection lost')) : tx.query(sql, params)),
                copyRows: (table: string, columns: string[], text: string) => (tx.copyRows as NonNullable<Queryable['copyRows']>)(table, columns, text),
              }),
            options,
          )) as Database['transaction'],
      };
      const loader = new BulkLoader(failing, server.app.system, { projectId: server.projectId, batchSize: 2 });
      for (const [i, r] of resources('lost').slice(0, 4).entries()) await loader.add(r, `line ${i + 1}`);
      await loader.endBundle();
      await loader.settle(); // both batches committed; the barrier after them fails
      assert.equal(loader.stored, 4);
      assert.equal(loader.unconfirmed, 4);
      assert.equal(storedNote(loader, 'earlier batches'), '4 resources of earlier batches are stored; the last 4 were committed but not confirmed on disk (the database failed at the load\'s end: check them)');
    });

    test('a load whose barrier committed reports what it stored, nothing unconfirmed', async () => {
      const loader = new BulkLoader(server.app.db, server.app.system, { projectId: server.projectId, batchSize: 2 });
      for (const [i, r] of resources('kept').slice(0, 3).entries()) await loader.add(r, `line ${i + 1}`);
      assert.equal(await loader.finish(), 3);
      await loader.settle();
      assert.equal(loader.unconfirmed, 0);
      assert.equal(storedNote(loader, 'earlier batches'), '3 resources of earlier batches are stored');
    });

    test('an id stored before becomes a new version; new ids in the same batch are COPYed', async () => {
      assert.equal(await load(server.app.db, [{ resourceType: 'Patient', id: 'ver-1', name: [{ family: 'First' }] }]), 1);
      const copies: string[] = [];
      const second = [
        { resourceType: 'Patient', id: 'ver-1', name: [{ family: 'Second' }] },
        { resourceType: 'Patient', id: 'ver-2', name: [{ family: 'Second' }] },
      ] as Resource[];
      assert.equal(await load(observed(server.app.db, copies), second), 2);
      assert.ok(copies.includes('resource'));
      const read = await server.fhir('GET', '/Patient/ver-1', { token: server.adminToken });
      assert.equal(read.body.meta.versionId, '2');
      assert.deepEqual(await ids('/Patient?family=second&_id=ver-1,ver-2'), ['1', '2']);
      assert.deepEqual(await ids('/Patient?family=first&_id=ver-1,ver-2'), []);
    });
  });
}
