import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
process.env.LATTICE_DEBUG_STATEMENTS = '1';
import { statementCounts } from '../src/storage/statement-count.js';
import { drivers, startServer, type TestServer } from './harness.js';

/**
 * What one request costs the database (docs/rest.md#cost-of-a-request), counted with
 * LATTICE_DEBUG_STATEMENTS=1: statements (each a round trip on PostgreSQL, BEGIN and COMMIT
 * included) of a create, an update, a read and a search, and the index rows a create writes.
 */
const patient = {
  resourceType: 'Patient',
  name: [{ family: 'Counted', given: ['Stella'] }],
  gender: 'female',
  birthDate: '1970-01-01',
  telecom: [{ system: 'email', value: 'stella@example.com' }],
};

for (const driver of drivers) {
  describe(`statements per request (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      // The background pollers (outbox e-mail, subscription deliveries, export jobs) would count
      // their statements inside a measured request now and then: they wait an hour here.
      const hour = '3600000';
      // What the database is asked: a search asked again is not answered from memory here
      // (test/search-cache.test.ts counts that).
      server = await startServer(driver, { env: { LATTICE_EMAIL_POLL_MS: hour, LATTICE_SUBSCRIPTION_POLL_MS: hour, LATTICE_EXPORT_POLL_MS: hour, LATTICE_SEARCH_CACHE: 'off' } });
      // Warm: the first write and search of a type load definitions and statistics once.
      for (let i = 0; i < 3; i++) {
        const res = await server.fhir('POST', '/Patient', { body: patient });
        assert.equal(res.status, 201);
        await server.fhir('PUT', `/Patient/${res.body.id}`, { body: { ...patient, id: res.body.id, gender: 'male' } });
        await server.fhir('GET', `/Patient/${res.body.id}`);
        await server.fhir('GET', '/Patient?family=counted&_count=10');
      }
    });
    after(() => server.stop());

    async function cost(fn: () => Promise<void>): Promise<{ statements: number; transactions: number }> {
      const before = { ...statementCounts };
      await fn();
      return { statements: statementCounts.statements - before.statements, transactions: statementCounts.transactions - before.transactions };
    }

    test('create, update, read, search', async () => {
      let id = '';
      const create = await cost(async () => {
        const res = await server.fhir('POST', '/Patient', { body: patient });
        assert.equal(res.status, 201);
        id = res.body.id;
      });
      const update = await cost(async () => {
        const res = await server.fhir('PUT', `/Patient/${id}`, { body: { ...patient, id, gender: 'male' } });
        assert.equal(res.status, 200);
      });
      const read = await cost(async () => {
        const res = await server.fhir('GET', `/Patient/${id}`);
        assert.equal(res.status, 200);
      });
      const search = await cost(async () => {
        const res = await server.fhir('GET', '/Patient?family=counted&_count=10');
        assert.equal(res.status, 200);
      });
      const rows: Record<string, number> = {};
      for (const table of ['resource', 'resource_history', 'search_string', 'search_token', 'search_reference', 'search_date', 'search_number', 'search_quantity', 'search_uri']) {
        const res = await server.app.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE resource_type = 'Patient' AND id = $1`, [id]);
        rows[table] = res.rows[0]?.n ?? 0;
      }
      // Before docs/rest.md#cost-of-a-request: a create was 6 statements on PostgreSQL (5 on
      // PGlite), an update 8 (7): BEGIN, row lock, NOTIFY, resource, history, index, COMMIT.
      assert.deepEqual(create, { statements: 1, transactions: 0 });
      assert.deepEqual(update, { statements: 2, transactions: 0 }); // the current version, then the write
      assert.ok(read.statements <= 1, `read: ${read.statements}`);
      assert.deepEqual(search, { statements: 1, transactions: 0 });
      // Index rows for the parameters that have values only: name, family, given (and their
      // phonetic and text forms) as strings, gender, email, telecom, identifier-free tokens,
      // birthdate as one date; no reference, number, quantity or uri rows.
      assert.deepEqual(
        { ...rows, search_string: rows.search_string > 0, search_token: rows.search_token > 0 },
        { resource: 1, resource_history: 2, search_string: true, search_token: true, search_reference: 0, search_date: 1, search_number: 0, search_quantity: 0, search_uri: 0 },
      );
    });

    test('a page with more after it counts its total (absent _total or accurate); _total=estimate asks the planner; _total=none counts nothing and has no total', async () => {
      for (let i = 0; i < 3; i++) assert.equal((await server.fhir('POST', '/Patient', { body: patient })).status, 201);
      type Page = { status: number; body: { total?: number; link: Array<{ relation: string }>; entry: unknown[] } };
      const page = async (query: string): Promise<{ statements: number; page: Page }> => {
        let res: Page | undefined;
        const { statements } = await cost(async () => {
          res = await server.fhir('GET', `/Patient?family=counted&_count=2${query}`);
        });
        assert.equal(res?.status, 200);
        assert.equal(res?.body.entry.length, 2);
        assert.deepEqual(res?.body.link.map((l) => l.relation), ['self', 'next']);
        return { statements, page: res };
      };
      const all = (await server.app.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM resource WHERE resource_type = 'Patient' AND NOT deleted AND content LIKE '%Counted%'`)).rows[0].n;
      // No _total: the page, the planner's estimates that choose the bounded COUNT's form
      // (docs/rest.md#query-plans), the COUNT; the same search again within a minute keeps the
      // choice — the planner's own form for these few matches, so the page counts them itself.
      const bounded = await page('');
      assert.equal(bounded.statements, 3);
      assert.equal(bounded.page.body.total, all);
      const again = await page('');
      assert.equal(again.statements, 1);
      assert.equal(again.page.body.total, all);
      const later = await server.fhir('GET', '/Patient?family=counted&_count=1&_offset=1');
      assert.equal((later.body as Page['body']).total, all); // a later page counts the same way
      const accurate = await page('&_total=accurate');
      assert.equal(accurate.statements, 2); // the page, then the COUNT of all matches
      assert.equal(accurate.page.body.total, all);
      const estimate = await page('&_total=estimate');
      assert.equal(estimate.statements, 2); // the page, then EXPLAIN of the same WHERE
      assert.ok((estimate.page.body.total ?? 0) >= 3, `estimate ${estimate.page.body.total}`); // never below the page and the row beyond it
      const uncounted = await page('&_total=none');
      assert.equal(uncounted.statements, 1);
      assert.equal(uncounted.page.body.total, undefined);
      // The last page knows its total without a COUNT, unless _total=none.
      let last: Page | undefined;
      const lastCost = await cost(async () => {
        last = await server.fhir('GET', `/Patient?family=counted&_count=2&_offset=${all - 1}`);
      });
      assert.equal(lastCost.statements, 1);
      assert.equal(last?.body.total, all);
      const lastNone = await server.fhir('GET', `/Patient?family=counted&_count=2&_offset=${all - 1}&_total=none`);
      assert.equal(lastNone.body.total, undefined);
    });

    test('updates racing on one resource are all kept, each on its own version', async () => {
      const created = await server.fhir('POST', '/Patient', { body: patient });
      const id = created.body.id as string;
      const dates = ['1971-01-01', '1972-01-01', '1973-01-01', '1974-01-01'];
      const answers = await Promise.all(dates.map((birthDate) => server.fhir('PUT', `/Patient/${id}`, { body: { ...patient, id, birthDate } })));
      assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200]);
      const versions = answers.map((a) => Number(a.body.meta.versionId)).sort();
      assert.deepEqual(versions, [2, 3, 4, 5]);
      const history = await server.fhir('GET', `/Patient/${id}/_history`);
      assert.equal(history.body.total, 5);
      const last = answers.find((a) => a.body.meta.versionId === '5');
      const read = await server.fhir('GET', `/Patient/${id}`);
      assert.equal(read.body.birthDate, last?.body.birthDate);
      const found = await server.fhir('GET', `/Patient?_id=${id}&birthdate=${read.body.birthDate}`);
      assert.equal(found.body.total, 1);
      const stale = await server.fhir('PUT', `/Patient/${id}`, { body: { ...patient, id, gender: 'other' }, headers: { 'if-match': 'W/"2"' } });
      assert.equal(stale.status, 412);
    });

    test('a transaction writes its plain creates in one statement; its reads still see them', async () => {
      const bundle = (family: string, patients: number, uuid: (i: number) => string) => {
        const entry: unknown[] = [];
        for (let i = 0; i < patients; i++) entry.push({ fullUrl: uuid(i), resource: { ...patient, name: [{ family, given: [`N${i}`] }] }, request: { method: 'POST', url: 'Patient' } });
        entry.push({
          resource: { resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: { reference: uuid(3) } },
          request: { method: 'POST', url: 'Observation' },
        });
        entry.push({ request: { method: 'GET', url: `Patient?family=${family}&_count=100` } });
        return { resourceType: 'Bundle', type: 'transaction', entry };
      };
      type Answer = { status: number; text: string; body: { entry: Array<{ response: { status: string; location?: string }; resource?: { entry?: unknown[] } }> } };
      const post = async (family: string, patients: number, prefix: string) => {
        let res: Answer | undefined;
        const counted = await cost(async () => {
          res = await server.fhir('POST', '', { body: bundle(family, patients, (i) => `urn:uuid:${prefix}-0000-4000-8000-${String(i).padStart(12, '0')}`) });
        });
        assert.equal(res?.status, 200, res?.text);
        return { ...counted, res: res };
      };
      await post('Warmbatch', 5, '7d0c1a52'); // the first Bundle loads the terminology its validation needs
      const small = await post('Smallbatch', 5, '6d0c1a52');
      const large = await post('Batched', 25, '8d0c1a52');
      // One transaction each; the creates add no statement per entry: one statement writes them
      // all (before the GET's search, which finds them), whatever their number.
      assert.equal(large.transactions, 1);
      assert.ok(large.statements <= small.statements, `${large.statements} statements for 26 creates, ${small.statements} for 6`);
      const entries = large.res.body.entry;
      assert.deepEqual(entries.slice(0, 26).map((e) => e.response.status), new Array(26).fill('201 Created'));
      assert.equal(entries[26].resource?.entry?.length, 25);
      const path = (i: number) => entries[i].response.location?.split('/_history')[0].split('/R4/')[1] as string;
      const read = await server.fhir('GET', `/${path(25)}`);
      assert.equal(read.status, 200);
      assert.equal(read.body.subject.reference, path(3));
      assert.equal((await server.fhir('GET', '/Patient?family=batched&_summary=count')).body.total, 25);
    });

    test('a 100-entry transaction of Patients costs a fixed number of statements: its creates one, each distinct conditional reference one search', async () => {
      const org = await server.fhir('POST', '/Organization', { body: { resourceType: 'Organization', identifier: [{ system: 'http://example.org/counted-org', value: 'C1' }] } });
      assert.equal(org.status, 201, org.text);
      const bundle = (entries: number, family: string) => ({
        resourceType: 'Bundle',
        type: 'transaction',
        entry: Array.from({ length: entries }, (_, i) => ({
          resource: { ...patient, name: [{ family, given: [`N${i}`] }], managingOrganization: { reference: 'Organization?identifier=http://example.org/counted-org|C1' } },
          request: { method: 'POST', url: 'Patient' },
        })),
      });
      const post = (entries: number, family: string) =>
        cost(async () => {
          const res = await server.fhir('POST', '', { body: bundle(entries, family) });
          assert.equal(res.status, 200, res.text);
          assert.equal(res.body.entry[entries - 1].resource.managingOrganization.reference, `Organization/${org.body.id}`);
        });
      await post(2, 'Warmconditional');
      // BEGIN, the one search of the conditional reference, whether the project checks references
      // (asked once per transaction), the one statement of every create, COMMIT. Before: 203 (a
      // search, a reference check and a create of its own for every entry).
      // (The one-entry Bundle first: PGlite's background ANALYZE, which a hundred new rows set off
      // a second later, must not run inside a measured request.)
      assert.deepEqual(await post(1, 'One'), { statements: 5, transactions: 1 });
      assert.deepEqual(await post(100, 'Hundred'), { statements: 5, transactions: 1 });
    });

    test('a transaction searches the conditional references of types it does not write first, then sends its creates in batches of 200', async () => {
      const system = 'http://example.org/counted-batches';
      for (const value of ['B0', 'B1', 'B2', 'B3']) {
        const org = await server.fhir('POST', '/Organization', { body: { resourceType: 'Organization', identifier: [{ system, value }] } });
        assert.equal(org.status, 201, org.text);
      }
      // 400 Patients; every 100 of them name another Organization (as a Synthea Bundle's patients
      // name their own). Before: each new criteria's search wrote the creates held before it
      // (4 searches, 4 writes); now the 4 searches come first and the creates go in 2 batches.
      const bundle = (entries: number, family: string) => ({
        resourceType: 'Bundle',
        type: 'transaction',
        entry: Array.from({ length: entries }, (_, i) => ({
          resource: { ...patient, name: [{ family, given: [`N${i}`] }], managingOrganization: { reference: `Organization?identifier=${system}|B${Math.floor(i / 100)}` } },
          request: { method: 'POST', url: 'Patient' },
        })),
      });
      assert.equal((await server.fhir('POST', '', { body: bundle(2, 'Warmbatches') })).status, 200); // loads what validation needs
      let res: { status: number; text: string; body: { entry: Array<{ resource: { managingOrganization: { reference: string } } }> } } | undefined;
      const counted = await cost(async () => {
        res = await server.fhir('POST', '', { body: bundle(400, 'Batchcounted') });
      });
      assert.equal(res?.status, 200, res?.text);
      // BEGIN, 4 searches, whether the project checks references, 2 batches of creates, COMMIT.
      assert.deepEqual(counted, { statements: 9, transactions: 1 });
      const orgs = new Set(res?.body.entry.map((e) => e.resource.managingOrganization.reference));
      assert.equal(orgs.size, 4);
      assert.equal((await server.fhir('GET', '/Patient?family=batchcounted&_summary=count')).body.total, 400);
    });

    test('an Observation indexes no composite item whose components cannot all match, and a code text once', async () => {
      const observation = {
        resourceType: 'Observation',
        status: 'final',
        code: { coding: [{ system: 'http://loinc.org', code: '8867-4', display: 'Heart rate' }], text: 'Heart rate' },
        valueQuantity: { value: 68, unit: '/min', system: 'http://unitsofmeasure.org', code: '/min' },
      };
      const created = await server.fhir('POST', '/Observation', { body: observation });
      assert.equal(created.status, 201, created.text);
      const id = created.body.id as string;
      const params = async (table: string) =>
        (await server.app.db.query<{ param: string }>(`SELECT param FROM ${table} WHERE resource_type = 'Observation' AND id = $1 ORDER BY param`, [id])).rows.map((r) => r.param);
      // code, combo-code and the two composites with a Quantity value: one row each (the text
      // rides on the coding's row); status. No code-value-concept, -date or -string rows.
      assert.deepEqual(await params('search_token'), ['code', 'code-value-quantity#0.0', 'combo-code', 'combo-code-value-quantity#0.0', 'status']);
      assert.deepEqual(
        [...new Set(await params('search_quantity'))],
        ['code-value-quantity#0.1', 'combo-code-value-quantity#0.1', 'combo-value-quantity', 'value-quantity'],
      );
      const found = async (query: string) => ((await server.fhir('GET', `/Observation?_id=${id}&${query}`)).body.entry ?? []).length;
      assert.equal(await found('code-value-quantity=http://loinc.org|8867-4$68'), 1);
      assert.equal(await found('code-value-concept=http://loinc.org|8867-4$http://loinc.org|8867-4'), 0);
      assert.equal(await found('code:text=heart'), 1);
      assert.equal(await found('combo-code=8867-4'), 1);
    });
  });
}
