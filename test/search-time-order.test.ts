import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { drivers, startServer, type ApiResponse, type TestServer } from './harness.js';

/**
 * A search driven by one token code or reference target in the default order reads its page
 * from that value's index rows, which carry their resource's last_updated (docs/rest.md#query-plans,
 * migration 625). What it must give: exactly what the order `_lastUpdated, id` gives — every
 * match once, in time order, across pages by `_cursor` and `_offset`, an update moving the
 * resource to the end, a delete removing it, and the rest of the search still applied.
 */
const LOINC = 'http://loinc.org';
const ids = (res: ApiResponse): string[] => (res.body.entry ?? []).map((e: { resource: { id: string } }) => e.resource.id);

for (const driver of drivers) {
  describe(`searches in time order from a value's index rows (${driver})`, () => {
    let server: TestServer;
    let patient: string;
    let other: string;
    /** The patient's Observations, oldest first. */
    const created: string[] = [];

    const create = async (body: Record<string, unknown>): Promise<{ id: string; meta: { lastUpdated: string } }> => {
      const res = await server.fhir('POST', `/${body.resourceType as string}`, { body });
      assert.equal(res.status, 201, res.text);
      return res.body;
    };

    /** Every page of `search` by following the next links; the ids in order. */
    async function walk(search: string): Promise<string[]> {
      const out: string[] = [];
      let res = await server.fhir('GET', search);
      for (let pages = 0; ; pages++) {
        assert.equal(res.status, 200, res.text);
        out.push(...ids(res));
        const next = (res.body.link as Array<{ relation: string; url: string }>).find((l) => l.relation === 'next');
        if (!next) return out;
        assert.ok(pages < 50, 'no end of the pages');
        res = await server.fhir('GET', next.url.slice(server.fhirUrl.length));
      }
    }

    before(async () => {
      server = await startServer(driver);
      patient = (await create({ resourceType: 'Patient', name: [{ family: 'Timeorder' }] })).id;
      other = (await create({ resourceType: 'Patient', name: [{ family: 'Elsewhere' }] })).id;
      for (let i = 0; i < 9; i++) {
        // The code twice (two systems' codings with the same code) on some: a code-only search has two rows of it.
        const coding = i % 3 === 0 ? [{ system: LOINC, code: '8302-2' }, { system: 'urn:local', code: '8302-2' }] : [{ system: LOINC, code: i % 2 === 0 ? '8302-2' : '29463-7' }];
        created.push((await create({ resourceType: 'Observation', status: i === 4 ? 'amended' : 'final', code: { coding }, subject: { reference: `Patient/${patient}` } })).id);
        await create({ resourceType: 'Observation', status: 'final', code: { coding: [{ system: LOINC, code: '8302-2' }] }, subject: { reference: `Patient/${other}` } });
      }
    });
    after(() => server.stop());

    test('a subject\'s matches come in time order, each once, across pages by cursor', async () => {
      assert.deepEqual(await walk(`/Observation?subject=Patient/${patient}&_count=2`), created);
      assert.deepEqual(await walk(`/Observation?subject=Patient/${patient}&_sort=-_lastUpdated&_count=4`), [...created].reverse());
      const first = await server.fhir('GET', `/Observation?subject=Patient/${patient}&_count=3&_offset=3`);
      assert.deepEqual(ids(first), created.slice(3, 6));
      assert.equal(first.body.total, 9);
    });

    test('a resource with two rows of the searched code comes once', async () => {
      const twice = created.filter((_, i) => i % 3 === 0);
      const withCode = created.filter((_, i) => i % 3 === 0 || i % 2 === 0);
      const found = await walk(`/Observation?code=8302-2&subject=Patient/${patient}&_count=2`);
      assert.deepEqual(found, withCode);
      const all = await walk('/Observation?code=8302-2&_count=4');
      assert.equal(new Set(all).size, all.length, 'a resource came twice');
      for (const id of twice) assert.ok(all.includes(id), id);
    });

    test('the rest of the search still applies to the rows read in order', async () => {
      const final = await walk(`/Observation?subject=Patient/${patient}&status=final&_count=2`);
      assert.deepEqual(final, created.filter((_, i) => i !== 4));
    });

    test('every write path stores the token and reference rows with their resource\'s last_updated', async () => {
      const subject = { reference: `Patient/${other}` };
      const bundle = (type: string) => ({
        resourceType: 'Bundle',
        type,
        entry: [
          { fullUrl: 'urn:uuid:0a3d0f4e-1b7e-4b8e-9a55-7c1b2f0e9d01', resource: { resourceType: 'Observation', status: 'final', code: { text: 'held' }, subject }, request: { method: 'POST', url: 'Observation' } },
          { resource: { resourceType: 'Observation', status: 'final', code: { text: 'conditional' }, subject, identifier: [{ system: 'urn:t', value: type }] }, request: { method: 'POST', url: 'Observation', ifNoneExist: `identifier=urn:t|${type}` } },
          { resource: { resourceType: 'Observation', id: `put-${type}`, status: 'final', code: { text: 'put' }, subject }, request: { method: 'PUT', url: `Observation/put-${type}` } },
        ],
      });
      for (const type of ['transaction', 'batch']) assert.equal((await server.fhir('POST', '', { body: bundle(type) })).status, 200);
      const patched = await server.fhir('PATCH', `/Observation/${created[0]}`, { body: [{ op: 'replace', path: '/status', value: 'amended' }], contentType: 'application/json-patch+json' });
      assert.equal(patched.status, 200, patched.text);
      const { rows } = await server.app.db.query<{ n: number; stamped: number }>(
        `SELECT count(*)::int AS n, count(*) FILTER (WHERE x.last_updated = r.last_updated)::int AS stamped
         FROM (SELECT resource_type, id, last_updated FROM search_token UNION ALL SELECT resource_type, id, last_updated FROM search_reference) x
         JOIN resource r USING (resource_type, id)`,
      );
      assert.ok(rows[0].n > 50, `${rows[0].n} rows`);
      assert.equal(rows[0].stamped, rows[0].n);
      // The patched one moved to the end of the subject's order.
      const order = await walk(`/Observation?subject=Patient/${patient}&_count=5`);
      assert.equal(order.at(-1), created[0]);
      created.push(created.shift() as string);
    });

    test('an update moves the resource to the end of the order; a delete removes it', async () => {
      const moved = created[1];
      const read = await server.fhir('GET', `/Observation/${moved}`);
      const updated = await server.fhir('PUT', `/Observation/${moved}`, { body: { ...read.body, status: 'final', issued: '2020-01-01T00:00:00Z' } });
      assert.equal(updated.status, 200, updated.text);
      const removed = created[2];
      assert.equal((await server.fhir('DELETE', `/Observation/${removed}`)).status, 200);
      const expected = [...created.filter((id) => id !== moved && id !== removed), moved];
      assert.deepEqual(await walk(`/Observation?subject=Patient/${patient}&_count=3`), expected);
      // The same order as the one read from the resource table (a search with no driving value).
      const byTable = (await walk('/Observation?_count=50')).filter((id) => expected.includes(id));
      assert.deepEqual(byTable, expected);
    });
  });
}
