import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../src/config.js';
import { createProject, drivers, loginTokens, ooText, startServer, type ApiResponse, type TestServer } from './harness.js';

/**
 * Nesting a caller chooses never overflows the stack (docs/rest.md#limits): before, a `_filter`
 * with 5,000 `not(` or 20,000 parentheses, a `_filter` of 50,000 comparisons joined by `or`, or a
 * `_filter` path of thousands of links answered 500 (Maximum call stack size exceeded); a SMART
 * policy whose criteria nest so made every request of its members a 500. Each is now a 400
 * `too-costly` naming the bound — or, in a policy's criteria, a grant that grants nothing.
 */
const form = 'application/x-www-form-urlencoded';

for (const driver of drivers) {
  describe(`search nesting bounds (${driver})`, () => {
    let server: TestServer;
    let orgId: string;
    before(async () => {
      server = await startServer(driver);
      const org = await server.fhir('POST', '/Organization', { body: { resourceType: 'Organization', name: 'Nestwell Clinic' } });
      assert.equal(org.status, 201, org.text);
      orgId = org.body.id;
    });
    after(() => server.stop());

    function assertTooCostly(res: ApiResponse, text: string): void {
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.issue[0].code, 'too-costly', res.text);
      assert.equal(ooText(res.body), text);
    }
    const filter = (type: string, expression: string) =>
      server.fhir('POST', `/${type}/_search`, { raw: `_filter=${encodeURIComponent(expression)}`, contentType: form });

    test('_filter with 5,000 not( → 400 too-costly (was a stack overflow, 500)', async () => {
      assertTooCostly(await filter('Organization', `${'not('.repeat(5000)}name eq x${')'.repeat(5000)}`), '_filter nested too deep: 5000 levels (at most 10)');
    });

    test('_filter with 20,000 parentheses → 400 too-costly', async () => {
      assertTooCostly(await filter('Organization', `${'('.repeat(20_000)}name eq x${')'.repeat(20_000)}`), '_filter nested too deep: 20000 levels (at most 10)');
    });

    test('_filter of 50,000 comparisons joined by or → 400 too-costly (the count itself overflowed before)', async () => {
      const flat = Array.from({ length: 50_000 }, () => 'name eq x').join(' or ');
      assertTooCostly(await filter('Organization', flat), '_filter has 50000 comparisons (at most 20)');
    });

    test('a _filter path of 20,000 links → 400 too-costly; one past LATTICE_SEARCH_MAX_CHAIN too', async () => {
      assertTooCostly(await filter('Organization', `${'partof.'.repeat(20_000)}name eq x`), '_filter chain too deep: 20000 links (at most 64)');
      assertTooCostly(await filter('Organization', `${'partof.'.repeat(4)}name eq x`), '_filter chain too deep: 4 links (at most 3)');
      const three = await filter('Organization', `${'partof.'.repeat(3)}name eq x`);
      assert.equal(three.status, 200, three.text);
    });

    test('nesting up to the bound (10 levels) is searched', async () => {
      const res = await filter('Organization', `${'not('.repeat(5)}${'('.repeat(5)}name eq nestwell${')'.repeat(10)}`);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(
        res.body.entry?.map((e: { resource: { id: string } }) => e.resource.id),
        [orgId],
      );
      assertTooCostly(await filter('Organization', `${'('.repeat(11)}name eq nestwell${')'.repeat(11)}`), '_filter nested too deep: 11 levels (at most 10)');
    });

    test('an access policy whose criteria nest too deep grants nothing by them: 200 and no rows, never 500', async () => {
      const p = await createProject(server, 'Nesting');
      const org = await server.fhir('POST', '/Organization', { token: p.adminToken, body: { resourceType: 'Organization', name: 'Deep' } });
      assert.equal(org.status, 201, org.text);
      const deepFilter = `_filter=${encodeURIComponent(`${'not('.repeat(5000)}name eq Deep${')'.repeat(5000)}`)}`;
      const policy = await server.fhir('POST', '/AccessPolicy', {
        token: p.adminToken,
        body: {
          resourceType: 'AccessPolicy',
          resource: [
            { resourceType: 'Organization', criteria: `Organization?${deepFilter}` },
            { resourceType: 'Organization', criteria: `Organization?${'partof.'.repeat(2000)}name=Deep` },
            { resourceType: 'Organization', criteria: `Organization?${'_has:Organization:partof:'.repeat(1000)}name=Deep` },
          ],
        },
      });
      assert.equal(policy.status, 201, policy.text.slice(0, 300));
      const email = `nest-${Date.now()}@example.org`;
      const invite = await server.request('POST', `/admin/projects/${p.projectId}/invite`, {
        body: { resourceType: 'Practitioner', firstName: 'Deep', lastName: 'Nest', email, password: 'nest-password-123', membership: { accessPolicy: { reference: `AccessPolicy/${policy.body.id}` } } },
        contentType: 'application/json',
        token: p.adminToken,
      });
      assert.equal(invite.status, 200, invite.text);
      const token = (await loginTokens(server, email, 'nest-password-123', { projectId: p.projectId })).access_token;
      const search = await server.fhir('GET', '/Organization', { token });
      assert.equal(search.status, 200, search.text.slice(0, 300));
      assert.equal(search.body.total, 0);
      const read = await server.fhir('GET', `/Organization/${org.body.id}`, { token });
      assert.equal(read.status, 404, read.text.slice(0, 300));
    });
  });
}

describe('search nesting settings', () => {
  test('LATTICE_SEARCH_MAX_FILTER_DEPTH is configuration, and no nesting bound may pass 64', () => {
    assert.equal(loadConfig({ LATTICE_SEARCH_MAX_FILTER_DEPTH: '3' }).searchLimits.maxFilterDepth, 3);
    assert.equal(loadConfig({}).searchLimits.maxFilterDepth, 10);
    for (const name of ['LATTICE_SEARCH_MAX_FILTER_DEPTH', 'LATTICE_SEARCH_MAX_CHAIN', 'LATTICE_SEARCH_MAX_HAS_DEPTH']) {
      assert.throws(() => loadConfig({ [name]: '65' }), { message: `${name} must be at most 64, got '65'` });
    }
  });
});
