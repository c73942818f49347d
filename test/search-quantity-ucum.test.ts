import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { drivers, startServer, type ApiResponse, type TestServer } from './harness.js';

/**
 * Quantity search across UCUM units (docs/rest.md#quantity-search): a search value in
 * `http://unitsofmeasure.org` is compared in the canonical unit, where every stored UCUM
 * quantity is also indexed, so `5.4|http://unitsofmeasure.org|mg` finds 5400 ug and 0.0054 g.
 * As a plain project member.
 */
const UCUM = 'http://unitsofmeasure.org';
const LOINC = 'http://loinc.org';
const ids = (res: ApiResponse): string[] => {
  assert.equal(res.status, 200, res.text);
  return (res.body.entry ?? []).map((e: { resource: { id: string } }) => e.resource.id).sort();
};

for (const driver of drivers) {
  describe(`search: quantities in UCUM units (${driver})`, () => {
    let server: TestServer;
    const r: Record<string, string> = {};
    const observation = async (key: string, value: number, code: string, system = UCUM) => {
      const res = await server.fhir('POST', '/Observation', {
        body: { resourceType: 'Observation', status: 'final', code: { coding: [{ system: LOINC, code: '2339-0' }] }, valueQuantity: { value, system, code, unit: code } },
      });
      assert.equal(res.status, 201, res.text);
      r[key] = res.body.id;
    };
    const search = async (query: string) => ids(await server.fhir('GET', `/Observation?${query}`));
    before(async () => {
      server = await startServer(driver);
      await observation('ug5400', 5400, 'ug');
      await observation('mg5_4', 5.4, 'mg');
      await observation('g0_0054', 0.0054, 'g');
      await observation('mg6', 6, 'mg');
      await observation('kg1', 1, 'kg');
      await observation('cel37', 37, 'Cel');
      await observation('iu10', 10, '[IU]');
      await observation('otherMg', 5.4, 'mg', 'http://example.org/units');
    });
    after(() => server.stop());

    test('a UCUM search value matches the same amount in any unit of its dimension', async () => {
      const found = await search(`value-quantity=5.4|${UCUM}|mg`);
      assert.deepEqual(found, [r.ug5400, r.mg5_4, r.g0_0054].sort());
      assert.deepEqual(await search(`value-quantity=5400|${UCUM}|ug`), found);
      assert.deepEqual(await search(`value-quantity=0.0054|${UCUM}|g`), found);
    });

    test('prefixes compare in the canonical unit; the precision of the value is kept', async () => {
      assert.deepEqual(await search(`value-quantity=gt5|${UCUM}|mg`), [r.ug5400, r.mg5_4, r.g0_0054, r.mg6, r.kg1].sort());
      assert.deepEqual(await search(`value-quantity=lt0.5|${UCUM}|kg`), [r.ug5400, r.mg5_4, r.g0_0054, r.mg6].sort());
      assert.deepEqual(await search(`value-quantity=ge1000|${UCUM}|g`), [r.kg1]);
      // 5.40 is 5.395..5.405 mg; 5.4 mg is in it, 6 mg is not.
      assert.deepEqual(await search(`value-quantity=5.40|${UCUM}|mg`), [r.ug5400, r.mg5_4, r.g0_0054].sort());
      assert.deepEqual(await search(`value-quantity=ne5.4|${UCUM}|mg`), [r.mg6, r.kg1].sort());
    });

    test('temperatures convert with their offset (37 Cel is 310.15 K)', async () => {
      assert.deepEqual(await search(`value-quantity=310.15|${UCUM}|K`), [r.cel37]);
      assert.deepEqual(await search(`value-quantity=37|${UCUM}|Cel`), [r.cel37]);
    });

    test('a unit without a conversion, another system, or no system match as written', async () => {
      assert.deepEqual(await search(`value-quantity=10|${UCUM}|[IU]`), [r.iu10]);
      assert.deepEqual(await search('value-quantity=5.4|http://example.org/units|mg'), [r.otherMg]);
      assert.deepEqual(await search('value-quantity=5.4||mg'), [r.mg5_4, r.otherMg].sort());
    });

    test('composite parameters convert their quantity component too', async () => {
      assert.deepEqual(await search(`code-value-quantity=${LOINC}|2339-0$5.4|${UCUM}|mg`), [r.ug5400, r.mg5_4, r.g0_0054].sort());
    });
  });
}
