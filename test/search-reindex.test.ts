import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { SEARCH_INDEX_VERSION } from '../src/storage/search/reindex.js';
import { createTestDatabase, drivers, loginAs, startServer, type TestServer } from './harness.js';

/**
 * Search index upgrades (docs/rest.md#search-index-upgrades): resources indexed by an older
 * version (here: their composite and full-text rows removed and the stored index version set
 * back, as a database written before those rows existed) are found by the new search forms
 * after a start, without being written again.
 */

const LOINC = 'http://loinc.org';

/** Waits (bounded) until `check` is true; the re-indexing runs in the background after a start. */
async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`not reached: ${what}`);
}

for (const driver of drivers) {
  describe(`search index upgrade (${driver})`, () => {
    test('a start re-indexes what an older version wrote: composites and _content find resources written before', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'lattice-reindex-'));
      const storage = driver === 'pg' ? { databaseUrl: await createTestDatabase() } : { dataDir: join(dir, 'data') };
      let second: TestServer | undefined;
      try {
        const first = await startServer(driver, storage);
        const obs = await first.fhir('POST', '/Observation', {
          body: {
            resourceType: 'Observation',
            status: 'final',
            code: { coding: [{ system: LOINC, code: '2339-0' }], text: 'Glucose quokka' },
            valueQuantity: { value: 120, unit: 'mg/dL', system: 'http://unitsofmeasure.org', code: 'mg/dL' },
          },
        });
        assert.equal(obs.status, 201, obs.text);
        const composite = `/Observation?code-value-quantity=${LOINC}|2339-0$gt100`;
        assert.deepEqual((await first.fhir('GET', composite)).body.entry?.map((e: { resource: { id: string } }) => e.resource.id), [obs.body.id]);
        // As an older version left it: no composite or full-text rows, index version 1.
        const db = first.app.db;
        for (const table of ['search_token', 'search_quantity', 'search_string', 'search_reference', 'search_date', 'search_number', 'search_uri']) {
          await db.query(`DELETE FROM ${table} WHERE param LIKE '%#%'`);
        }
        await db.query('DELETE FROM search_text');
        await db.query('UPDATE search_reindex SET version = 1');
        assert.equal((await first.fhir('GET', composite)).body.total, 0);
        assert.equal((await first.fhir('GET', '/Observation?_content=quokka')).body.total, 0);
        await first.stop();

        second = await startServer(driver, storage);
        const token = await loginAs(second, first.member!.email, first.member!.password, first.projectId);
        const s = second;
        await eventually(async () => (await s.fhir('GET', composite, { token })).body.total === 1, 'the composite finds the Observation');
        assert.equal((await s.fhir('GET', '/Observation?_content=quokka', { token })).body.total, 1);
        const state = await s.app.db.query<{ version: number; after_type: string | null }>('SELECT version, after_type FROM search_reindex');
        assert.deepEqual(state.rows, [{ version: SEARCH_INDEX_VERSION, after_type: null }]);
      } finally {
        await second?.stop();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}
