import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { generateSnomedLike } from '../bench/snomed-like.js';
import { writeRf2, type Rf2Release } from '../bench/snomed-rf2.js';
import { importRf2 } from '../src/terminology/store/rf2-import.js';
import { drivers, ooText, startServer, type TestServer } from './harness.js';

/**
 * ECL work the step bound counts (docs/terminology.md#limits, issue 32 finding 2), over HTTP on a
 * synthetic 4,000-concept edition (~17,000 descriptions): a term filter with many search terms
 * tests every description against every term, and that is what is counted — past
 * LATTICE_TX_ECL_MAX_STEPS a 400 `too-costly` naming the setting; below it the evaluation runs
 * in slices, so `/healthz` and a read sent while it runs are answered first (an ordering, not a
 * timing). Before, only the descriptions were counted: the 2,000-term filter ran to its end (200)
 * and the 400-term one held the event loop for the whole evaluation.
 */

const SCT = 'http://snomed.info/sct';
const quiet = () => new Writable({ write: (_c, _e, done) => done() });

/** `* {{ term = ("…" "…" …) }}` with `n` one-word search terms that match nothing. */
const termFilter = (n: number) => `* {{ term = (${Array.from({ length: n }, (_, i) => `"qq${i}"`).join(' ')}) }}`;

const expandEcl = (server: TestServer, ecl: string) =>
  server.fhir('POST', '/ValueSet/$expand', {
    body: {
      resourceType: 'Parameters',
      parameter: [
        { name: 'valueSet', resource: { resourceType: 'ValueSet', status: 'active', compose: { include: [{ system: SCT, filter: [{ property: 'constraint', op: '=', value: ecl }] }] } } },
        { name: 'count', valueInteger: 5 },
      ],
    },
  });

for (const driver of drivers) {
  describe(`ECL work is counted and shares the event loop (${driver})`, () => {
    let server: TestServer;
    let dir: string;
    let release: Rf2Release;
    let patientId: string;
    before(async () => {
      server = await startServer(driver);
      dir = mkdtempSync(join(tmpdir(), 'lattice-ecl-bounds-'));
      release = await writeRf2(generateSnomedLike(4_000), join(dir, 'rf2'), { date: '20240131' });
      await importRf2(release.folder, server.app, { out: quiet() });
      const patient = await server.fhir('POST', '/Patient', { body: { resourceType: 'Patient', name: [{ family: 'Ecl' }] } });
      assert.equal(patient.status, 201, patient.text);
      patientId = patient.body.id;
      // The edition's index, graph and descriptions are built before the measured requests.
      const warm = await expandEcl(server, `<< ${release.ids[0]} {{ term = "zzz" }}`);
      assert.equal(warm.status, 200, warm.text.slice(0, 500));
    });
    after(async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    test('a term filter of 2,000 terms over the edition: 400 too-costly naming LATTICE_TX_ECL_MAX_STEPS', async () => {
      const res = await expandEcl(server, termFilter(2_000));
      assert.equal(res.status, 400, res.text.slice(0, 500));
      assert.equal(res.body.issue[0].code, 'too-costly');
      assert.match(ooText(res.body) ?? '', /^ECL expression too costly to evaluate \(more than 20000000 steps, LATTICE_TX_ECL_MAX_STEPS\): '\* \{\{ term = \("qq0" /);
    });

    test('hierarchy operators over the whole edition are allowed: < (* MINUS root), << (* MINUS root)', async () => {
      const root = release.ids[0];
      for (const ecl of [`< (* MINUS ${root})`, `<< (* MINUS ${root})`]) {
        const res = await expandEcl(server, ecl);
        assert.equal(res.status, 200, `${ecl}: ${res.text.slice(0, 500)}`);
        assert.ok(res.body.expansion.total > 3_000, `${ecl}: ${res.body.expansion.total}`);
      }
    });

    test('/healthz and a read sent during a long allowed evaluation are answered before it', async () => {
      const order: string[] = [];
      const heavy = expandEcl(server, termFilter(400)).then((res) => {
        order.push('expand');
        return res;
      });
      await delay(50); // the evaluation is under way
      const [health, read] = await Promise.all([
        server.request('GET', '/healthz', { token: null }).then((res) => (order.push('healthz'), res)),
        server.fhir('GET', `/Patient/${patientId}`).then((res) => (order.push('read'), res)),
      ]);
      const expanded = await heavy;
      assert.equal(expanded.status, 200, expanded.text.slice(0, 500));
      assert.equal(expanded.body.expansion.total, 0);
      assert.equal(health.status, 200, health.text);
      assert.equal(read.status, 200, read.text);
      assert.deepEqual(order.slice(2), ['expand'], `completion order: ${order.join(', ')}`);
    });
  });
}
