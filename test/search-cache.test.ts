import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
process.env.LATTICE_DEBUG_STATEMENTS = '1';
import type { Bundle, Patient } from '@medplum/fhirtypes';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { statementCounts } from '../src/storage/statement-count.js';
import { INDEX_TABLES } from '../src/storage/search/index-rows.js';
import { reindexIfOutdated } from '../src/storage/search/reindex.js';
import { createSearchIndex } from '../src/storage/search/sql-search-index.js';
import { openPgDatabase } from '../src/storage/pg-database.js';
import { createMember, createProject, createTestDatabase, drivers, startServer, type TestServer } from './harness.js';
import { attachPolicy } from './support/smart.js';
import { startServerProcess, type ServerProcess } from './support/server-process.js';

/**
 * The search answer cache (storage/search/search-cache.ts, docs/rest.md#search-answer-cache): a
 * search asked again while nothing was written is the same Bundle without a statement; every kind
 * of write — through the API, a re-index, SQL of any other writer, another node — is seen by the
 * next search; callers with different visibility never share an answer.
 */

// The background pollers (outbox e-mail, subscription deliveries, export jobs) would count their
// statements inside a measured request now and then: they wait an hour here.
const HOUR = '3600000';
const QUIET = { LATTICE_EMAIL_POLL_MS: HOUR, LATTICE_SUBSCRIPTION_POLL_MS: HOUR, LATTICE_EXPORT_POLL_MS: HOUR };

/** Statements sent while `fn` runs (nothing else runs meanwhile). */
async function statementsOf(fn: () => Promise<void>): Promise<number> {
  const before = statementCounts.statements;
  await fn();
  return statementCounts.statements - before;
}

type Search = { status: number; body: Bundle; statements: number };

/** GET `path` (under the FHIR base) with the statements it ran. */
async function search(server: TestServer, path: string, token?: string): Promise<Search> {
  let res: { status: number; body: Bundle; text: string } | undefined;
  const statements = await statementsOf(async () => {
    res = await server.fhir<Bundle>('GET', path, token === undefined ? {} : { token });
  });
  assert.equal(res?.status, 200, `${path}: ${res?.text}`);
  return { status: res.status, body: res.body, statements };
}

/** The ids of a Bundle's entries, in order. */
const ids = (b: Bundle) => (b.entry ?? []).map((e) => `${e.resource?.resourceType}/${e.resource?.id}`);

/** Searches `path` twice: the second time is the same Bundle, answered without a statement. */
async function twice(server: TestServer, path: string, token?: string): Promise<Bundle> {
  // On PostgreSQL a commit is heard asynchronously: an answer kept before the notification of an
  // earlier write arrived is dropped by it — correct, but asked again it is read once more. So the
  // node first hears every earlier commit.
  await server.app.db.caughtUp();
  const first = await search(server, path, token);
  const again = await search(server, path, token);
  assert.deepEqual(again.body, first.body, `${path}: the kept answer differs`);
  assert.equal(again.statements, 0, `${path}: asked again, ${again.statements} statements`);
  return first.body;
}

test('LATTICE_SEARCH_CACHE: on (64 MB) by default, off, or a budget in MB; anything else stops the start', () => {
  assert.equal(loadConfig({}).searchCacheMb, 64);
  assert.equal(loadConfig({ LATTICE_SEARCH_CACHE: 'on' }).searchCacheMb, 64);
  assert.equal(loadConfig({ LATTICE_SEARCH_CACHE: 'off' }).searchCacheMb, 0);
  assert.equal(loadConfig({ LATTICE_SEARCH_CACHE: '256' }).searchCacheMb, 256);
  assert.throws(() => loadConfig({ LATTICE_SEARCH_CACHE: '1GB' }), { message: "LATTICE_SEARCH_CACHE must be 'on', 'off' or a size in MB, got '1GB'" });
});

for (const driver of drivers) {
  describe(`search answer cache (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver, { env: QUIET });
    });
    after(() => server.stop());

    const patient = (family: string, extra: Partial<Patient> = {}): Patient => ({ resourceType: 'Patient', name: [{ family, given: ['Cara'] }], ...extra });
    const create = async (resource: object, token?: string): Promise<string> => {
      const res = await server.fhir('POST', `/${(resource as { resourceType: string }).resourceType}`, { body: resource, ...(token ? { token } : {}) });
      assert.equal(res.status, 201, res.text);
      return res.body.id as string;
    };

    test('asked again: the same Bundle — total, paging links, _cursor, includes, _summary=count, _total — without a statement', async () => {
      const ids0: string[] = [];
      for (let i = 0; i < 5; i++) ids0.push(await create(patient('Kept', { birthDate: `1980-01-0${i + 1}`, gender: i % 2 ? 'male' : 'female' })));
      for (const id of ids0.slice(0, 2)) await create({ resourceType: 'Observation', status: 'final', code: { text: 'kept' }, subject: { reference: `Patient/${id}` } });
      const paged = await twice(server, '/Patient?family=Kept&_count=2');
      assert.equal(paged.total, 5);
      assert.deepEqual(paged.link?.map((l) => l.relation), ['self', 'next']);
      // The next page by its cursor, twice; then the page after it.
      const next = paged.link?.find((l) => l.relation === 'next')?.url as string;
      const second = await twice(server, next.slice(next.indexOf('/Patient')));
      assert.equal(second.entry?.length, 2);
      assert.equal(ids(second).some((id) => ids(paged).includes(id)), false);
      for (const path of [
        '/Patient?family=Kept&_count=2&_offset=2',
        '/Patient?family=Kept&_count=2&_total=accurate',
        '/Patient?family=Kept&_count=2&_total=none',
        '/Patient?family=Kept&_summary=count',
        '/Patient?family=Kept&_sort=-birthdate&_count=3&_elements=birthDate',
        '/Patient?family=Kept&_revinclude=Observation:subject',
        '/Observation?code:text=kept&_include=Observation:subject',
        '/Patient?family=Nobody',
      ]) {
        await twice(server, path);
      }
      assert.equal((await search(server, '/Patient?family=Kept&_summary=count')).body.total, 5);
      const included = await search(server, '/Patient?family=Kept&_revinclude=Observation:subject');
      assert.deepEqual(included.body.entry?.map((e) => e.search?.mode), ['match', 'match', 'match', 'match', 'match', 'include', 'include']);
      // `_total=estimate` is the planner's figure, which statistics move without a write: never kept.
      const estimate = await search(server, '/Patient?family=Kept&_count=2&_total=estimate');
      assert.ok((await search(server, '/Patient?family=Kept&_count=2&_total=estimate')).statements > 0);
      assert.ok((estimate.body.total ?? 0) >= 3);
    });

    test('each kind of write is seen by the next search: create, update, patch, delete, transaction, batch', async () => {
      const path = '/Patient?family=Writes';
      const seen = async (): Promise<string[]> => ids(await twice(server, path)).sort();
      assert.deepEqual(await seen(), []);
      const a = await create(patient('Writes'));
      assert.deepEqual(await seen(), [`Patient/${a}`]);
      const b = await create(patient('Other'));
      assert.deepEqual(await seen(), [`Patient/${a}`]);
      assert.equal((await server.fhir('PUT', `/Patient/${b}`, { body: { ...patient('Writes'), id: b } })).status, 200);
      assert.deepEqual(await seen(), [`Patient/${a}`, `Patient/${b}`].sort());
      const patched = await server.fhir('PATCH', `/Patient/${b}`, {
        contentType: 'application/json-patch+json',
        body: [{ op: 'replace', path: '/name/0/family', value: 'Patched' }],
      });
      assert.equal(patched.status, 200, patched.text);
      assert.deepEqual(await seen(), [`Patient/${a}`]);
      assert.equal((await server.fhir('DELETE', `/Patient/${a}`)).status, 200);
      assert.deepEqual(await seen(), []);
      const transaction = await server.fhir('POST', '/', {
        body: { resourceType: 'Bundle', type: 'transaction', entry: [{ fullUrl: 'urn:uuid:0b6f2c4e-3b7e-4a59-9d7e-1f2a3b4c5d6e', resource: patient('Writes'), request: { method: 'POST', url: 'Patient' } }] },
      });
      assert.equal(transaction.status, 200, transaction.text);
      const c = /Patient\/([^/]+)/.exec(transaction.body.entry[0].response.location as string)?.[1];
      assert.deepEqual(await seen(), [`Patient/${c}`]);
      const batch = await server.fhir('POST', '/', { body: { resourceType: 'Bundle', type: 'batch', entry: [{ request: { method: 'DELETE', url: `Patient/${c}` } }] } });
      assert.equal(batch.status, 200, batch.text);
      assert.deepEqual(await seen(), []);
    });

    test('a bulk load (what `lattice import` and the import route run: rows COPYed) is seen by the next search', async () => {
      const path = '/Patient?family=Loaded&_sort=_id';
      assert.deepEqual(ids(await twice(server, path)), []);
      const loader = server.app.system.bulkLoad({ projectId: server.projectId });
      for (const id of ['loaded-1', 'loaded-2']) await loader.add({ ...patient('Loaded'), id }, id);
      assert.equal(await loader.finish(), 2);
      assert.deepEqual(ids(await twice(server, path)), ['Patient/loaded-1', 'Patient/loaded-2']);
    });

    test('a search-index rewrite without a resource write is seen: SQL on an index table, a re-index pass', async () => {
      const id = await create(patient('Reindexed'));
      const path = '/Patient?family=Reindexed';
      assert.deepEqual(ids(await twice(server, path)), [`Patient/${id}`]);
      // Any writer of an index table — here plain SQL, as an index upgrade would run — is heard.
      await server.app.db.query(`DELETE FROM search_string WHERE resource_type = 'Patient' AND id = $1`, [id]);
      assert.deepEqual(ids(await twice(server, path)), []);
      // A table no search reads does not drop kept answers.
      await server.app.db.query('UPDATE search_reindex SET version = 1');
      assert.equal((await search(server, path)).statements, 0);
      // The index upgrade pass (reindex.ts) writes the rows again; the next search finds the Patient.
      const progress = await reindexIfOutdated(server.app.db, createSearchIndex(), pino({ level: 'silent' }), () => false);
      assert.equal(progress.current, true);
      assert.deepEqual(ids(await twice(server, path)), [`Patient/${id}`]);
    });

    test('every table a search reads announces its changes (a trigger on resource and each search_* index table)', async () => {
      const tables = ['resource', ...INDEX_TABLES.map((t) => `search_${t}`)];
      const res = await server.app.db.query<{ table: string }>(
        `SELECT c.relname AS table FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE t.tgname = 'search_changed' AND NOT t.tgisinternal ORDER BY 1`,
      );
      assert.deepEqual(res.rows.map((r) => r.table), [...tables].sort());
      const all = await server.app.db.query<{ table: string }>(`SELECT tablename AS table FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE 'search\\_%' ORDER BY 1`);
      const bookkeeping = ['search_reindex', 'search_reindex_skipped'];
      assert.deepEqual(all.rows.map((r) => r.table).filter((t) => !bookkeeping.includes(t)), tables.filter((t) => t !== 'resource').sort(), 'a new index table needs the trigger');
    });

    test('callers with different visibility never share an answer: two projects, a member restricted by an access policy', async () => {
      const north = await createProject(server, 'Cache north');
      const south = await createProject(server, 'Cache south');
      const northId = await create(patient('Shared'), north.adminToken);
      const southId = await create(patient('Shared'), south.adminToken);
      const path = '/Patient?family=Shared';
      assert.deepEqual(ids(await twice(server, path, north.adminToken)), [`Patient/${northId}`]);
      assert.deepEqual(ids(await twice(server, path, south.adminToken)), [`Patient/${southId}`]);

      // In one project: a member whose access policy lets it see female Patients and laboratory
      // Observations only, and a member without a policy, asking the same searches.
      const female = await create(patient('Policy', { gender: 'female' }), north.adminToken);
      const male = await create(patient('Policy', { gender: 'male' }), north.adminToken);
      const lab = await create({ resourceType: 'Observation', status: 'final', category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'laboratory' }] }], code: { text: 'x' }, subject: { reference: `Patient/${female}` } }, north.adminToken);
      const vital = await create({ resourceType: 'Observation', status: 'final', category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'vital-signs' }] }], code: { text: 'x' }, subject: { reference: `Patient/${female}` } }, north.adminToken);
      const open = await createMember(server, north.projectId);
      const restricted = await createMember(server, north.projectId);
      const policy = await attachPolicy(server, north.projectId, restricted.membershipId, {
        resource: [
          { resourceType: 'Patient', criteria: 'Patient?gender=female' },
          { resourceType: 'Observation', criteria: 'Observation?category=laboratory' },
        ],
      });
      const patients = '/Patient?family=Policy&_sort=gender';
      const withObservations = `/Patient?_id=${female}&_revinclude=Observation:subject`;
      assert.deepEqual(ids(await twice(server, patients, open.token)), [`Patient/${female}`, `Patient/${male}`]);
      assert.deepEqual(ids(await twice(server, patients, restricted.token)), [`Patient/${female}`]);
      assert.deepEqual(ids(await twice(server, withObservations, open.token)).sort(), [`Observation/${lab}`, `Observation/${vital}`, `Patient/${female}`].sort());
      assert.deepEqual(ids(await twice(server, withObservations, restricted.token)).sort(), [`Observation/${lab}`, `Patient/${female}`].sort());
      // Asked again in the other order: each still its own.
      assert.deepEqual(ids((await search(server, patients, open.token)).body), [`Patient/${female}`, `Patient/${male}`]);

      // The policy changed: the restricted member's next search follows it.
      const stored = await server.app.system.read('AccessPolicy', policy);
      await server.app.system.update({ ...stored, resource: [{ resourceType: 'Patient', criteria: 'Patient?gender=male' }, { resourceType: 'Observation', criteria: 'Observation?category=vital-signs' }] } as typeof stored);
      assert.deepEqual(ids(await twice(server, patients, restricted.token)), [`Patient/${male}`]);
      assert.deepEqual(ids(await twice(server, `/Observation?subject=Patient/${female}`, restricted.token)), [`Observation/${vital}`]);
      // The membership loses its policy: everything of the project.
      const membership = await server.app.system.read('ProjectMembership', restricted.membershipId);
      const { accessPolicy: _dropped, ...unrestricted } = membership as typeof membership & { accessPolicy?: unknown };
      await server.app.system.update(unrestricted);
      assert.deepEqual(ids(await twice(server, patients, restricted.token)), [`Patient/${female}`, `Patient/${male}`]);
    });

    test('a caller changing the resources it was given does not change the kept answer', async () => {
      const id = await create(patient('Untouched'));
      const query = { resourceType: 'Patient', params: [['family', 'Untouched']] as Array<[string, string]> };
      await server.app.db.caughtUp(); // as in `twice`
      const first = await server.app.system.search(query);
      (first.resources[0] as Patient).name = [{ family: 'Changed by the caller' }];
      first.modes?.push('include');
      let again: Awaited<ReturnType<typeof server.app.system.search>> | undefined;
      assert.equal(await statementsOf(async () => void (again = await server.app.system.search(query))), 0);
      assert.equal(again?.resources[0].id, id);
      assert.deepEqual((again?.resources[0] as Patient).name, [{ family: 'Untouched', given: ['Cara'] }]);
      assert.deepEqual(again?.modes, ['match']);
    });

    test('code that holds an open transaction searches the database: it sees its own writes, and nothing of it is kept', async () => {
      const query = { resourceType: 'Patient', params: [['family', 'RolledBack']] as Array<[string, string]> };
      // On PGlite such a search runs inside the transaction (one connection) and finds the new
      // row; on PostgreSQL it runs on another connection and does not.
      const inside = driver === 'pglite' ? 1 : 0;
      const rolledBack = async (): Promise<number> => {
        let found = -1;
        await assert.rejects(
          server.app.db.transaction(async (tx) => {
            await server.app.system.inTransaction(tx).create(patient('RolledBack'));
            found = (await server.app.system.search(query)).resources.length;
            throw new Error('rolled back');
          }),
          /rolled back/,
        );
        return found;
      };
      await server.app.db.caughtUp(); // as in `twice`
      assert.equal(await rolledBack(), inside);
      assert.equal((await server.app.system.search(query)).resources.length, 0, 'an answer of the rolled-back transaction was kept');
      // Kept from outside the transaction: not given to code inside it.
      assert.equal((await server.app.system.search(query)).resources.length, 0);
      assert.equal(await rolledBack(), inside);
      assert.equal((await server.app.system.search(query)).resources.length, 0);
    });

    test('inside a transaction a search reads the database (its own writes included)', async () => {
      const path = '/Patient?family=Inside';
      assert.deepEqual(ids(await twice(server, path)), []);
      // A conditional create's If-None-Exist runs inside the transaction: the second create finds the first.
      const entry = (n: number) => ({ fullUrl: `urn:uuid:7d0b6a0e-1c11-4d2a-8f00-00000000000${n}`, resource: patient('Inside'), request: { method: 'POST', url: 'Patient', ifNoneExist: 'family=Inside' } });
      const first = await server.fhir('POST', '/', { body: { resourceType: 'Bundle', type: 'transaction', entry: [entry(1)] } });
      assert.equal(first.status, 200, first.text);
      const second = await server.fhir('POST', '/', { body: { resourceType: 'Bundle', type: 'transaction', entry: [entry(2)] } });
      assert.equal(second.status, 200, second.text);
      assert.equal(second.body.entry[0].response.status, '200 OK');
      assert.equal(ids(await twice(server, path)).length, 1);
    });
  });

  describe(`search answer cache off (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver, { env: { ...QUIET, LATTICE_SEARCH_CACHE: 'off' } });
    });
    after(() => server.stop());

    test('LATTICE_SEARCH_CACHE=off: a search asked again reads the database', async () => {
      assert.equal((await server.fhir('POST', '/Patient', { body: { resourceType: 'Patient', name: [{ family: 'Uncached' }] } })).status, 201);
      const first = await search(server, '/Patient?family=Uncached');
      const again = await search(server, '/Patient?family=Uncached');
      assert.deepEqual(again.body, first.body);
      assert.equal(again.statements, 1);
    });
  });
}

if (drivers.includes('pg')) {
  describe('search answer cache across two server processes (pg)', () => {
    const PUBLIC_URL = 'http://lattice.test';
    let databaseUrl: string;
    let a: TestServer;
    let node: ServerProcess;
    let bUrl: string;
    let headers: Record<string, string>;
    before(async () => {
      databaseUrl = await createTestDatabase();
      a = await startServer('pg', { databaseUrl, env: { ...QUIET, LATTICE_PUBLIC_URL: PUBLIC_URL } });
      node = await startServerProcess({ DATABASE_URL: databaseUrl, LATTICE_PUBLIC_URL: PUBLIC_URL, LATTICE_ADMIN_PASSWORD: 'admin-password-123' });
      bUrl = `${node.baseUrl}/fhir/R4`;
      headers = { authorization: `Bearer ${a.memberToken}`, 'content-type': 'application/fhir+json' };
    });
    after(async () => {
      await node.stop();
      await a.stop();
    });

    const searchB = async (path: string): Promise<Bundle> => {
      const res = await fetch(`${bUrl}${path}`, { headers });
      assert.equal(res.status, 200);
      return (await res.json()) as Bundle;
    };

    test('a write through either process is seen by the very next search through the other', async () => {
      const path = '/Patient?family=Nodes&_sort=_id';
      const expected: string[] = [];
      for (let round = 1; round <= 10; round++) {
        // Both nodes have answered (and kept) the search as it is now.
        assert.deepEqual(ids(await twice(a, path)), expected);
        assert.deepEqual(ids(await searchB(path)), expected);
        assert.deepEqual(ids(await searchB(path)), expected);
        if (round % 2 === 1) {
          const created = await fetch(`${bUrl}/Patient`, { method: 'POST', headers, body: JSON.stringify({ resourceType: 'Patient', name: [{ family: 'Nodes' }] }) });
          assert.equal(created.status, 201);
          expected.push(`Patient/${((await created.json()) as Patient).id}`);
          expected.sort();
          assert.deepEqual(ids((await search(a, path)).body), expected, `round ${round}: A answered a stale search`);
        } else {
          const created = await a.fhir<Patient>('POST', '/Patient', { body: { resourceType: 'Patient', name: [{ family: 'Nodes' }] } });
          expected.push(`Patient/${created.body.id}`);
          expected.sort();
          assert.deepEqual(ids(await searchB(path)), expected, `round ${round}: B answered a stale search`);
        }
      }
    });

    test('SQL of any other writer on the database is seen by the next search', async () => {
      const created = await a.fhir<Patient>('POST', '/Patient', { body: { resourceType: 'Patient', name: [{ family: 'Elsewhere' }] } });
      const path = '/Patient?family=Elsewhere';
      assert.deepEqual(ids(await twice(a, path)), [`Patient/${created.body.id}`]);
      const other = await openPgDatabase(databaseUrl);
      try {
        await other.query(`DELETE FROM search_string WHERE resource_type = 'Patient' AND id = $1`, [created.body.id]);
      } finally {
        await other.close();
      }
      assert.deepEqual(ids((await search(a, path)).body), []);
    });
  });
}
