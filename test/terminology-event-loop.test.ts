import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { drivers, startServer, type TestServer } from './harness.js';

/**
 * No terminology request holds the event loop (docs/terminology.md#limits): an expansion that
 * tests every concept of a large code system against a long text filter runs in slices that
 * yield, so `/healthz` and a FHIR read sent while it runs are answered before it is — an
 * ordering, not a timing. Before the slices, the whole pass ran in one turn of the event loop
 * and both waited for it.
 */
const SYSTEM = 'http://example.org/large-for-loop';
const VS = 'http://example.org/fhir/ValueSet/large-for-loop';
const SIZE = 60_000;

for (const driver of drivers) {
  describe(`a worst-case expansion shares the event loop (${driver})`, () => {
    let server: TestServer;
    let patientId: string;
    before(async () => {
      server = await startServer(driver);
      const concept = Array.from({ length: SIZE }, (_, i) => ({ code: `c${i}`, display: `Concept number ${i}`, designation: [{ language: 'de', value: `Begriff ${i}` }] }));
      const cs = await server.fhir('PUT', '/CodeSystem/large-for-loop', { body: { resourceType: 'CodeSystem', id: 'large-for-loop', url: SYSTEM, status: 'active', content: 'complete', concept } });
      assert.equal(cs.status, 201, cs.text.slice(0, 300));
      const vs = await server.fhir('PUT', '/ValueSet/large-for-loop', { body: { resourceType: 'ValueSet', id: 'large-for-loop', url: VS, status: 'active', compose: { include: [{ system: SYSTEM }] } } });
      assert.equal(vs.status, 201, vs.text);
      const patient = await server.fhir('POST', '/Patient', { body: { resourceType: 'Patient', name: [{ family: 'Loop' }] } });
      assert.equal(patient.status, 201, patient.text);
      patientId = patient.body.id;
      // The index is built (and kept) before the measured request.
      const warm = await server.fhir('GET', `/ValueSet/$expand?url=${encodeURIComponent(VS)}&count=1`);
      assert.equal(warm.status, 200, warm.text.slice(0, 300));
    });
    after(() => server.stop());

    test('/healthz and a read sent during the expansion are answered before it', async () => {
      // Every concept matches the first 499 words; none the last: each concept is tested 500 times.
      const filter = `${'concept '.repeat(499)}zzz`;
      const order: string[] = [];
      const expansion = server.fhir('GET', `/ValueSet/$expand?url=${encodeURIComponent(VS)}&count=10&filter=${encodeURIComponent(filter)}`).then((res) => {
        order.push('expand');
        return res;
      });
      await delay(30); // the expansion is under way (its pass over 60,000 concepts takes ~0.5 s here)
      const [health, read] = await Promise.all([
        server.request('GET', '/healthz', { token: null }).then((res) => (order.push('healthz'), res)),
        server.fhir('GET', `/Patient/${patientId}`).then((res) => (order.push('read'), res)),
      ]);
      const expanded = await expansion;
      assert.equal(expanded.status, 200, expanded.text.slice(0, 300));
      assert.equal(expanded.body.expansion.total, 0);
      assert.equal(health.status, 200, health.text);
      assert.equal(read.status, 200, read.text);
      assert.deepEqual(order.slice(2), ['expand'], `completion order: ${order.join(', ')}`);
    });
  });
}
