import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { drivers, ooText, startServer, type ApiResponse, type TestServer } from './harness.js';

/**
 * Bounded work per search (docs/rest.md#limits). Before the bounds, ~1,500 repeated parameters
 * froze a PGlite server for minutes and a ~900-link chain overflowed the stack (500). Each now
 * gets a 400 `too-costly` naming the bound, and other clients keep being served meanwhile.
 */
for (const driver of drivers) {
  describe(`search limits (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver);
    });
    after(() => server.stop());

    function assertTooCostly(res: ApiResponse, text: string): void {
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.issue[0].code, 'too-costly', res.text);
      assert.equal(ooText(res.body), text);
    }

    test('1,500 repeated parameters: 400, and /healthz answers meanwhile', async () => {
      // Short values: the request line stays well within the HTTP header limit (431 past it).
      const query = Array.from({ length: 1500 }, (_, i) => `name=${i}`).join('&');
      const [search, health] = await Promise.all([server.fhir('GET', `/Patient?${query}`), server.request('GET', '/healthz')]);
      assertTooCostly(search, 'Too many search parameters: 1500 (at most 30)');
      assert.equal(health.status, 200, health.text);
    });

    test('30 parameters (the bound) are still searched', async () => {
      const query = Array.from({ length: 30 }, (_, i) => `name=n${i}`).join('&');
      const res = await server.fhir('GET', `/Patient?${query}&_count=5`);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.total, 0);
    });

    test('a 900-link chain: 400 (was a stack overflow)', async () => {
      const chain = `${'general-practitioner.'.repeat(900)}name`;
      assertTooCostly(await server.fhir('POST', '/Patient/_search', { raw: `${chain}=x`, contentType: 'application/x-www-form-urlencoded' }), 'Chained search parameter too deep: 900 links (at most 3)');
    });

    test('5,000 comma-separated values: 400', async () => {
      const ids = Array.from({ length: 5000 }, (_, i) => `id${i}`).join(',');
      assertTooCostly(await server.fhir('POST', '/Patient/_search', { raw: `_id=${ids}`, contentType: 'application/x-www-form-urlencoded' }), 'Too many values for search parameter _id: 5000 (at most 100)');
    });

    test('1,000 _include parameters: 400, and /healthz answers meanwhile', async () => {
      const query = Array.from({ length: 1000 }, () => '_include=Patient:general-practitioner').join('&');
      const [search, health] = await Promise.all([
        server.fhir('POST', '/Patient/_search', { raw: query, contentType: 'application/x-www-form-urlencoded' }),
        server.request('GET', '/healthz'),
      ]);
      assertTooCostly(search, 'Too many _include/_revinclude parameters: 1000 (at most 10)');
      assert.equal(health.status, 200, health.text);
    });

    test('_revinclude fan-out past the bound: 400 (was a silently cut page)', async () => {
      const strict = await startServer(driver, { env: { LATTICE_SEARCH_MAX_INCLUDED: '3' } });
      try {
        const patient = await strict.fhir('POST', '/Patient', { body: { resourceType: 'Patient' } });
        const observe = () => strict.fhir('POST', '/Observation', { body: { resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: { reference: `Patient/${patient.body.id}` } } });
        for (let i = 0; i < 3; i++) assert.equal((await observe()).status, 201);
        const search = `/Patient?_id=${patient.body.id}&_revinclude=Observation:subject`;
        const ok = await strict.fhir('GET', search);
        assert.equal(ok.status, 200, ok.text);
        assert.equal(ok.body.entry.length, 4, 'the match and exactly 3 included');
        assert.equal((await observe()).status, 201);
        const [res, health] = await Promise.all([strict.fhir('GET', search), strict.request('GET', '/healthz')]);
        assertTooCostly(res, '_include/_revinclude would add more than 3 resources (at most 3): narrow the search or lower _count');
        assert.equal(health.status, 200, health.text);
      } finally {
        await strict.stop();
      }
    });

    test('the bounds are configuration', async () => {
      const strict = await startServer(driver, { env: { LATTICE_SEARCH_MAX_PARAMETERS: '2' } });
      try {
        assertTooCostly(await strict.fhir('GET', '/Patient?name=a&name=b&name=c'), 'Too many search parameters: 3 (at most 2)');
        assert.equal((await strict.fhir('GET', '/Patient?name=a&name=b&_count=1')).status, 200);
      } finally {
        await strict.stop();
      }
    });

    test('without _total a total is counted up to LATTICE_SEARCH_MAX_COUNTED matches; past it the searchset has none, _total=accurate counts all', async () => {
      const strict = await startServer(driver, { env: { LATTICE_SEARCH_MAX_COUNTED: '3' } });
      try {
        const family = `Counted${Date.now()}`;
        const add = async () => assert.equal((await strict.fhir('POST', '/Patient', { body: { resourceType: 'Patient', name: [{ family }] } })).status, 201);
        for (let i = 0; i < 3; i++) await add();
        const page = (query = '') => strict.fhir('GET', `/Patient?family=${family}&_count=1${query}`);
        const three = await page();
        assert.equal(three.status, 200, three.text);
        assert.equal(three.body.total, 3); // at the bound: exact, on a page with more after it
        await add();
        const four = await page();
        assert.equal(four.status, 200, four.text);
        assert.equal(four.body.total, undefined); // past it: no total, the next link still there
        assert.ok(four.body.link.some((l: { relation: string }) => l.relation === 'next'), four.text);
        assert.equal((await page('&_total=accurate')).body.total, 4);
        assert.equal((await strict.fhir('GET', `/Patient?family=${family}&_count=10`)).body.total, 4); // a last page knows it
      } finally {
        await strict.stop();
      }
    });
  });
}
