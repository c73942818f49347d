import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { drivers, ooText, startServer, type ApiResponse, type TestServer } from './harness.js';

/**
 * Bounded terminology work (docs/terminology.md#limits): a value set with very many compose
 * filters and a `codeableConcept` with very many codings were evaluated in full, holding the
 * database meanwhile. Each is now a 400 `too-costly` before any work, and other clients keep
 * being served.
 */
const SYSTEM = 'http://example.org/limits';

for (const driver of drivers) {
  describe(`terminology limits (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver);
      const concept = Array.from({ length: 20 }, (_, i) => ({ code: `c${i}` }));
      const cs = await server.fhir('PUT', '/CodeSystem/limits', { body: { resourceType: 'CodeSystem', id: 'limits', url: SYSTEM, status: 'active', content: 'complete', concept } });
      assert.equal(cs.status, 201, cs.text);
    });
    after(() => server.stop());

    function assertTooCostly(res: ApiResponse, text: string): void {
      assert.equal(res.status, 400, res.text.slice(0, 500));
      assert.equal(res.body.issue[0].code, 'too-costly', res.text.slice(0, 500));
      assert.equal(ooText(res.body), text);
    }

    const valueSet = (id: string, filters: number) => ({
      resourceType: 'ValueSet',
      id,
      url: `http://example.org/fhir/ValueSet/${id}`,
      status: 'active',
      compose: { include: [{ system: SYSTEM, filter: Array.from({ length: filters }, (_, i) => ({ property: 'concept', op: 'regex', value: `c${i % 20}.*` })) }] },
    });
    const validate = (url: string) =>
      server.fhir('POST', '/ValueSet/$validate-code', {
        body: { resourceType: 'Parameters', parameter: [{ name: 'url', valueUri: url }, { name: 'coding', valueCoding: { system: SYSTEM, code: 'c1' } }] },
      });

    test('a value set with 60 filters: 400 on $validate-code and $expand, and /healthz answers meanwhile', async () => {
      assert.equal((await server.fhir('PUT', '/ValueSet/many-filters', { body: valueSet('many-filters', 60) })).status, 201);
      const url = 'http://example.org/fhir/ValueSet/many-filters';
      const text = `Too many filters in ValueSet ${url}: 60 (at most 50)`;
      const [res, health] = await Promise.all([validate(url), server.request('GET', '/healthz', { token: null })]);
      assertTooCostly(res, text);
      assert.equal(health.status, 200, health.text);
      assertTooCostly(await server.fhir('GET', `/ValueSet/$expand?url=${encodeURIComponent(url)}`), text);
    });

    test('50 filters (the bound) are evaluated', async () => {
      assert.equal((await server.fhir('PUT', '/ValueSet/fifty', { body: valueSet('fifty', 50) })).status, 201);
      const res = await validate('http://example.org/fhir/ValueSet/fifty');
      assert.equal(res.status, 200, res.text);
    });

    test('a codeableConcept of 10,001 codings: 400, and /healthz answers meanwhile', async () => {
      const coding = Array.from({ length: 10_001 }, (_, i) => ({ system: SYSTEM, code: `c${i % 20}` }));
      const request = (path: string, first: object) =>
        server.fhir('POST', path, { body: { resourceType: 'Parameters', parameter: [first, { name: 'codeableConcept', valueCodeableConcept: { coding } }] } });
      const [vs, health] = await Promise.all([
        request('/ValueSet/$validate-code', { name: 'url', valueUri: 'http://example.org/fhir/ValueSet/fifty' }),
        server.request('GET', '/healthz', { token: null }),
      ]);
      assertTooCostly(vs, 'Too many codings in codeableConcept: 10001 (at most 10000)');
      assert.deepEqual(vs.body.issue[0].expression, ['codeableConcept']);
      assert.equal(health.status, 200, health.text);
      assertTooCostly(await request('/CodeSystem/$validate-code', { name: 'url', valueUri: SYSTEM }), 'Too many codings in codeableConcept: 10001 (at most 10000)');
    });

    test('the bounds are configuration', async () => {
      const strict = await startServer(driver, { env: { LATTICE_TX_MAX_FILTERS: '2', LATTICE_TX_MAX_CODINGS: '2' } });
      try {
        const concept = [{ code: 'c1' }, { code: 'c2' }];
        await strict.fhir('PUT', '/CodeSystem/limits', { body: { resourceType: 'CodeSystem', id: 'limits', url: SYSTEM, status: 'active', content: 'complete', concept } });
        const three = { ...valueSet('three', 3), url: 'http://example.org/fhir/ValueSet/three' };
        assert.equal((await strict.fhir('PUT', '/ValueSet/three', { body: three })).status, 201);
        const res = await strict.fhir('GET', `/ValueSet/$expand?url=${encodeURIComponent(three.url)}`);
        assertTooCostly(res, `Too many filters in ValueSet ${three.url}: 3 (at most 2)`);
        const cc = await strict.fhir('POST', '/CodeSystem/$validate-code', {
          body: { resourceType: 'Parameters', parameter: [{ name: 'url', valueUri: SYSTEM }, { name: 'codeableConcept', valueCodeableConcept: { coding: [{ system: SYSTEM, code: 'c1' }, { system: SYSTEM, code: 'c2' }, { system: SYSTEM, code: 'c3' }] } }] },
        });
        assertTooCostly(cc, 'Too many codings in codeableConcept: 3 (at most 2)');
      } finally {
        await strict.stop();
      }
    });

    test('a request-supplied CodeSystem past LATTICE_TX_MAX_INLINE_CONCEPTS (nested concepts count): 400 before it is indexed; at the bound it is used', async () => {
      const strict = await startServer(driver, { env: { LATTICE_TX_MAX_INLINE_CONCEPTS: '10' } });
      try {
        const inline = (children: number) => ({
          resourceType: 'CodeSystem',
          url: 'http://example.org/inline-limit',
          status: 'active',
          content: 'complete',
          concept: [{ code: 'root', concept: Array.from({ length: children }, (_, i) => ({ code: `k${i}` })) }],
        });
        const validate = (children: number) =>
          strict.fhir('POST', '/CodeSystem/$validate-code', {
            body: {
              resourceType: 'Parameters',
              parameter: [{ name: 'url', valueUri: 'http://example.org/inline-limit' }, { name: 'code', valueCode: 'k3' }, { name: 'tx-resource', resource: inline(children) }],
            },
          });
        const over = await validate(10);
        assertTooCostly(over, 'Too many concepts in the request-supplied CodeSystem http://example.org/inline-limit: more than 10 (store it with PUT CodeSystem instead)');
        assert.deepEqual(over.body.issue[0].expression, ['tx-resource']);
        const at = await validate(9);
        assert.equal(at.status, 200, at.text);
        assert.equal(at.body.parameter.find((p: { name: string }) => p.name === 'result').valueBoolean, true, at.text);
      } finally {
        await strict.stop();
      }
    });
  });
}
