import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { drivers, ooText, startServer, type TestServer } from './harness.js';

/**
 * UCUM work is bounded (docs/terminology.md#ucum and #limits, issue 32 findings 3, 4 and 6): an
 * expression nested deeper than 20 parentheses or longer than 500 characters is never parsed —
 * `$validate-code`, `$lookup` and a quantity search answer 400 `too-costly` (before: 500, a stack
 * overflow), an Observation with such a unit is stored and indexed without its canonical row
 * (before: 500 on create, and a re-index that died); the unit expressions one request checks add
 * up to at most LATTICE_TX_MAX_UCUM_CHARACTERS (20,000) characters, and the checks give the event
 * loop back, so `/healthz` and a read are answered while a large inline value set is expanded.
 */

const UCUM = 'http://unitsofmeasure.org';
const deep = (n: number) => `${'('.repeat(n)}mg${')'.repeat(n)}`;
/** A valid expression of about 30 characters, distinct for each `i` (its annotation). */
const unit = (i: number) => `mg.kg/dL/s.m2.mol/h/L.g{u${i}}`;

const parameters = (...parameter: object[]) => ({ body: { resourceType: 'Parameters', parameter } });
const expandCodes = (server: TestServer, codes: string[]) =>
  server.fhir(
    'POST',
    '/ValueSet/$expand',
    parameters({ name: 'valueSet', resource: { resourceType: 'ValueSet', status: 'active', compose: { include: [{ system: UCUM, concept: codes.map((code) => ({ code })) }] } } }, { name: 'count', valueInteger: 5 }),
  );

for (const driver of drivers) {
  describe(`UCUM expressions are bounded (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver);
    });
    after(() => server.stop());

    test('$validate-code and $lookup of a code 20,000 parentheses deep: 400 too-costly', async () => {
      const code = deep(20_000);
      const validate = await server.fhir('POST', '/CodeSystem/$validate-code', parameters({ name: 'url', valueUri: UCUM }, { name: 'code', valueCode: code }));
      assert.equal(validate.status, 400, validate.text.slice(0, 300));
      assert.equal(validate.body.issue[0].code, 'too-costly');
      assert.match(ooText(validate.body) ?? '', /^Error processing unit '\(+…': The unit expression is 40002 characters long \(at most 500\)$/);
      const lookup = await server.fhir('POST', '/CodeSystem/$lookup', parameters({ name: 'system', valueUri: UCUM }, { name: 'code', valueCode: deep(21) }));
      assert.equal(lookup.status, 400, lookup.text.slice(0, 300));
      assert.equal(ooText(lookup.body), `Error processing unit '${deep(21)}': The unit expression nests parentheses 21 deep (at most 20)`);
      // Within the bounds, the same nesting is a unit.
      const fine = await server.fhir('POST', '/CodeSystem/$lookup', parameters({ name: 'system', valueUri: UCUM }, { name: 'code', valueCode: deep(20) }));
      assert.equal(fine.status, 200, fine.text.slice(0, 300));
    });

    test('an Observation with a 5,000- or 20,000-deep unit is stored; a quantity search with one is 400', async () => {
      for (const n of [5_000, 20_000]) {
        const created = await server.fhir('POST', '/Observation', {
          body: { resourceType: 'Observation', status: 'final', code: { text: 'deep' }, valueQuantity: { value: 1, system: UCUM, code: deep(n) } },
        });
        assert.equal(created.status, 201, created.text.slice(0, 300));
      }
      const found = await server.fhir('GET', `/Observation?value-quantity=1|${UCUM}|mg`);
      assert.equal(found.status, 200, found.text.slice(0, 300));
      const search = await server.fhir('GET', `/Observation?value-quantity=1|${UCUM}|${encodeURIComponent(deep(3_000))}`);
      assert.equal(search.status, 400, search.text.slice(0, 300));
      assert.equal(search.body.issue[0].code, 'too-costly');
      assert.equal(ooText(search.body), 'Search parameter value-quantity: the UCUM unit cannot be converted: The unit expression is 6002 characters long (at most 500)');
    });

    test('$expand of an inline value set of more than 20,000 characters of unit expressions: 400 naming LATTICE_TX_MAX_UCUM_CHARACTERS', async () => {
      const codes = Array.from({ length: 2_000 }, (_, i) => unit(i));
      const res = await expandCodes(server, codes);
      assert.equal(res.status, 400, res.text.slice(0, 300));
      assert.equal(res.body.issue[0].code, 'too-costly');
      assert.equal(ooText(res.body), `Too many unit expressions to check in one request: more than 20000 characters of ${UCUM} codes (LATTICE_TX_MAX_UCUM_CHARACTERS)`);
    });

    test('/healthz and a read sent while a large UCUM value set is expanded are answered before it', async () => {
      const patient = await server.fhir('POST', '/Patient', { body: { resourceType: 'Patient', name: [{ family: 'Units' }] } });
      assert.equal(patient.status, 201, patient.text);
      // 600 codes (~17,500 characters) never checked before (within the bound): each is parsed by the library.
      // (Distinct per driver: the checks of the other driver's run are cached in this process.)
      const codes = Array.from({ length: 600 }, (_, i) => unit((driver === 'pg' ? 200_000 : 100_000) + i));
      const order: string[] = [];
      const expansion = expandCodes(server, codes).then((res) => (order.push('expand'), res));
      await delay(50);
      const [health, read] = await Promise.all([
        server.request('GET', '/healthz', { token: null }).then((res) => (order.push('healthz'), res)),
        server.fhir('GET', `/Patient/${patient.body.id}`).then((res) => (order.push('read'), res)),
      ]);
      const expanded = await expansion;
      assert.equal(expanded.status, 200, expanded.text.slice(0, 300));
      assert.equal(expanded.body.expansion.total, 600);
      assert.equal(health.status, 200, health.text);
      assert.equal(read.status, 200, read.text);
      assert.deepEqual(order.slice(2), ['expand'], `completion order: ${order.join(', ')}`);
    });

    test('the new unit codes one request converts for the search index add up to at most 4000 characters: 400 too-costly, nothing stored', async () => {
      // 28 characters each, none converted before (a distinct power of ten, negative for the second
      // driver: conversions are remembered per process); an annotation alone would not make a unit new.
      const sign = drivers.indexOf(driver) === 0 ? '' : '-';
      const code = (i: number) => `10*${sign}${i + 100}.mg.kg/dL/s.m2.mol/h/L`;
      const observation = (tag: string, from: number, n: number) => ({
        resourceType: 'Observation',
        status: 'final',
        identifier: [{ system: 'urn:ucum-budget', value: tag }],
        code: { text: 'many units' },
        component: Array.from({ length: n }, (_, k) => ({ code: { text: `c${k}` }, valueQuantity: { value: 1, system: UCUM, code: code(from + k) } })),
      });
      const refused = await server.fhir('POST', '/Observation', { body: observation('all-at-once', 0, 150) });
      assert.equal(refused.status, 400, refused.text.slice(0, 300));
      assert.equal(refused.body.issue[0].code, 'too-costly');
      assert.equal(
        ooText(refused.body),
        "The search index converts at most 4000 characters of UCUM unit codes it has not seen before per request; this request's quantities have more (send them in smaller requests)",
      );
      const stored = await server.fhir('GET', '/Observation?identifier=urn:ucum-budget|all-at-once');
      assert.equal(stored.body.total ?? stored.body.entry?.length ?? 0, 0);
      // The same quantities in two requests are stored, and found in another unit of the dimension.
      for (const [tag, from] of [['first-half', 0], ['second-half', 75]] as const) {
        const created = await server.fhir('POST', '/Observation', { body: observation(tag, from, 75) });
        assert.equal(created.status, 201, created.text.slice(0, 300));
      }
      // 1 × 10*229.mg.kg/dL/s.m2.mol/h/L (the second half's) is 1 × 10*226.g.kg/dL/s.m2.mol/h/L (10*-229 mg: 10*-232 g).
      const inGrams = sign === '' ? '10*226.g.kg/dL/s.m2.mol/h/L' : '10*-232.g.kg/dL/s.m2.mol/h/L';
      const found = await server.fhir('GET', `/Observation?component-value-quantity=1|${UCUM}|${encodeURIComponent(inGrams)}&_elements=identifier`);
      assert.equal(found.status, 200, found.text.slice(0, 300));
      assert.deepEqual(found.body.entry?.map((e: { resource: { identifier: Array<{ value: string }> } }) => e.resource.identifier[0].value), ['second-half']);

      // In a transaction the budget is the Bundle's, and the entry that passes it is named (its
      // creates are held and written together: their index rows were built only when sent).
      const bundle = {
        resourceType: 'Bundle',
        type: 'transaction',
        entry: [observation('tx-a', 200, 75), observation('tx-b', 275, 75), observation('tx-c', 350, 10)].map((resource) => ({ resource, request: { method: 'POST', url: 'Observation' } })),
      };
      const tx = await server.fhir('POST', '/', { body: bundle });
      assert.equal(tx.status, 400, tx.text.slice(0, 300));
      assert.equal(tx.body.issue[0].code, 'too-costly');
      assert.match(ooText(tx.body) ?? '', /^Bundle\.entry\[1\]: The search index converts at most 4000 characters of UCUM unit codes/);
      const none = await server.fhir('GET', '/Observation?identifier=urn:ucum-budget|tx-a');
      assert.equal(none.body.total ?? none.body.entry?.length ?? 0, 0);
    });
  });
}
