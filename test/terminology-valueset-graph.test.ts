import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { drivers, ooText, startServer, type TestServer } from './harness.js';

/**
 * Value sets that include each other in a diamond (docs/terminology.md#limits): L levels of W
 * value sets, each including all W of the next level, have W^L include paths but only W·L value
 * sets. Each value set is evaluated once per request, so such a graph costs its number of value
 * sets: before, `$expand` walked every path on the event loop (8^12 paths: no answer, the server
 * frozen) and `$validate-code` answered 500 (the stack overflowed). The value sets and includes
 * one evaluation may touch are bounded (400 `too-costly` past them).
 */
const SYSTEM = 'http://example.org/diamond-cs';
const WIDTH = 8;
const LEVELS = 12;
const url = (level: number, i: number) => `http://example.org/fhir/ValueSet/d-${level}-${i}`;

/** Level L-1 draws codes from the code system; every other level includes all of the next. */
function diamond(): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (let level = 0; level < LEVELS; level++) {
    for (let i = 0; i < WIDTH; i++) {
      const include =
        level === LEVELS - 1
          ? [{ system: SYSTEM, concept: [{ code: `c${i}` }] }]
          : Array.from({ length: WIDTH }, (_, j) => ({ valueSet: [url(level + 1, j)] }));
      out.push({ resourceType: 'ValueSet', id: `d-${level}-${i}`, url: url(level, i), status: 'active', compose: { include } });
    }
  }
  return out;
}

for (const driver of drivers) {
  describe(`value-set graphs are evaluated once per value set (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver);
      const concept = Array.from({ length: WIDTH + 2 }, (_, i) => ({ code: `c${i}`, display: `Code ${i}` }));
      const cs = await server.fhir('PUT', '/CodeSystem/diamond-cs', { body: { resourceType: 'CodeSystem', id: 'diamond-cs', url: SYSTEM, status: 'active', content: 'complete', concept } });
      assert.equal(cs.status, 201, cs.text);
      // As one transaction: the plain member writes the graph as any member could.
      const entry = diamond().map((vs) => ({ resource: vs, request: { method: 'PUT', url: `ValueSet/${vs.id as string}` } }));
      const tx = await server.fhir('POST', '', { body: { resourceType: 'Bundle', type: 'transaction', entry } });
      assert.equal(tx.status, 200, tx.text.slice(0, 500));
    });
    after(() => server.stop());

    test(`$expand of a ${WIDTH}^${LEVELS}-path diamond answers its ${WIDTH} codes, and /healthz answers meanwhile`, async () => {
      const [res, health] = await Promise.all([
        server.fhir('GET', `/ValueSet/$expand?url=${encodeURIComponent(url(0, 0))}`),
        server.request('GET', '/healthz', { token: null }),
      ]);
      assert.equal(res.status, 200, res.text.slice(0, 500));
      assert.equal(res.body.expansion.total, WIDTH);
      assert.deepEqual(res.body.expansion.contains.map((c: { code: string }) => c.code).sort(), Array.from({ length: WIDTH }, (_, i) => `c${i}`).sort());
      // Every value set of the graph below the root is named once.
      const used = res.body.expansion.parameter.filter((p: { name: string }) => p.name === 'used-valueset');
      assert.equal(used.length, WIDTH * (LEVELS - 1));
      assert.equal(health.status, 200, health.text);
    });

    test('$validate-code on the diamond: a member is valid, a non-member is not (no 500)', async () => {
      const validate = (code: string) =>
        server.fhir('POST', '/ValueSet/$validate-code', {
          body: { resourceType: 'Parameters', parameter: [{ name: 'url', valueUri: url(0, 0) }, { name: 'system', valueUri: SYSTEM }, { name: 'code', valueCode: code }] },
        });
      const [member, outsider, health] = await Promise.all([validate('c3'), validate(`c${WIDTH + 1}`), server.request('GET', '/healthz', { token: null })]);
      assert.equal(member.status, 200, member.text.slice(0, 500));
      assert.equal(member.body.parameter.find((p: { name: string }) => p.name === 'result').valueBoolean, true, member.text.slice(0, 500));
      assert.equal(outsider.status, 200, outsider.text.slice(0, 500));
      assert.equal(outsider.body.parameter.find((p: { name: string }) => p.name === 'result').valueBoolean, false, outsider.text.slice(0, 500));
      assert.equal(health.status, 200, health.text);
    });

    test('past LATTICE_TX_MAX_VALUESETS or LATTICE_TX_MAX_INCLUDES: 400 too-costly, before the walk', async () => {
      const strict = await startServer(driver, { env: { LATTICE_TX_MAX_VALUESETS: '20', LATTICE_TX_MAX_INCLUDES: '1000' } });
      const loose = await startServer(driver, { env: { LATTICE_TX_MAX_VALUESETS: '1000', LATTICE_TX_MAX_INCLUDES: '30' } });
      try {
        for (const s of [strict, loose]) {
          const cs = await s.fhir('PUT', '/CodeSystem/diamond-cs', { body: { resourceType: 'CodeSystem', id: 'diamond-cs', url: SYSTEM, status: 'active', content: 'complete', concept: [{ code: 'c0' }] } });
          assert.equal(cs.status, 201, cs.text);
          const entry = diamond().map((vs) => ({ resource: vs, request: { method: 'PUT', url: `ValueSet/${vs.id as string}` } }));
          assert.equal((await s.fhir('POST', '', { body: { resourceType: 'Bundle', type: 'transaction', entry } })).status, 200);
        }
        const expandStrict = await strict.fhir('GET', `/ValueSet/$expand?url=${encodeURIComponent(url(0, 0))}`);
        assert.equal(expandStrict.status, 400, expandStrict.text.slice(0, 500));
        assert.equal(expandStrict.body.issue[0].code, 'too-costly');
        assert.equal(ooText(expandStrict.body), `Too many value sets in the evaluation of ValueSet ${url(0, 0)}: more than 20`);
        const validateStrict = await strict.fhir('POST', '/ValueSet/$validate-code', {
          body: { resourceType: 'Parameters', parameter: [{ name: 'url', valueUri: url(0, 0) }, { name: 'system', valueUri: SYSTEM }, { name: 'code', valueCode: 'c0' }] },
        });
        assert.equal(validateStrict.status, 400, validateStrict.text.slice(0, 500));
        assert.equal(ooText(validateStrict.body), `Too many value sets in the evaluation of ValueSet ${url(0, 0)}: more than 20`);
        const expandLoose = await loose.fhir('GET', `/ValueSet/$expand?url=${encodeURIComponent(url(0, 0))}`);
        assert.equal(expandLoose.status, 400, expandLoose.text.slice(0, 500));
        assert.equal(expandLoose.body.issue[0].code, 'too-costly');
        assert.equal(ooText(expandLoose.body), `Too many includes in the evaluation of ValueSet ${url(0, 0)}: more than 30`);
      } finally {
        await strict.stop();
        await loose.stop();
      }
    });
  });
}
