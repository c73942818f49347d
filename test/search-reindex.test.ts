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

    /**
     * Issue 32 finding 4: one stored Observation whose indexing threw (a 5,000-deep UCUM unit)
     * stopped the re-index at every start, for good. Now what cannot be indexed is skipped, logged
     * and listed, and every other resource is re-indexed. The deep unit itself no longer throws
     * (the UCUM bounds): it is re-indexed like any other; what still cannot be indexed here is
     * content nested deeper than the extraction walks and content that is not JSON.
     */
    test('a resource that cannot be indexed is skipped, logged and listed; the re-index finishes', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'lattice-reindex-'));
      const storage = driver === 'pg' ? { databaseUrl: await createTestDatabase() } : { dataDir: join(dir, 'data') };
      let second: TestServer | undefined;
      try {
        const first = await startServer(driver, storage);
        const create = async (body: Record<string, unknown>) => {
          const res = await first.fhir('POST', `/${body.resourceType as string}`, { body });
          assert.equal(res.status, 201, res.text);
          return res.body.id as string;
        };
        const patient = (family: string) => create({ resourceType: 'Patient', name: [{ family }] });
        const deepUnit = await create({ resourceType: 'Observation', status: 'final', code: { text: 'x' }, valueQuantity: { value: 1, system: 'http://unitsofmeasure.org', code: 'm' } });
        const [deepContent, notJson, good] = [await patient('Poison2'), await patient('Poison3'), await patient('Healthy')];
        // 20,000 nested extensions, written out as text (JSON.stringify itself overflows on it).
        const deep = `${'{"url":"http://example.org/n","extension":['.repeat(20_000)}{"url":"http://example.org/leaf","valueString":"x"}${']}'.repeat(20_000)}`;
        const poison: Array<[string, string]> = [
          [deepUnit, JSON.stringify({ resourceType: 'Observation', id: deepUnit, status: 'final', code: { text: 'x' }, valueQuantity: { value: 1, system: 'http://unitsofmeasure.org', code: `${'('.repeat(5000)}m${')'.repeat(5000)}` } })],
          [deepContent, `{"resourceType":"Patient","id":"${deepContent}","extension":[${deep}]}`],
          [notJson, '{"resourceType":"Patient",'],
        ];
        // As an older version (or a bug) left them: stored content this version cannot index.
        const db = first.app.db;
        for (const [id, content] of poison) await db.query('UPDATE resource SET content = $2 WHERE id = $1', [id, content]);
        await db.query("DELETE FROM search_string WHERE param = 'family'");
        await db.query('UPDATE search_reindex SET version = 1');
        assert.equal((await first.fhir('GET', '/Patient?family=Healthy')).body.total, 0);
        await first.stop();

        const lines: string[] = [];
        second = await startServer(driver, { ...storage, logLines: lines });
        const token = await loginAs(second, first.member!.email, first.member!.password, first.projectId);
        const s = second;
        await eventually(
          async () => (await s.app.db.query<{ version: number }>('SELECT version FROM search_reindex')).rows[0].version === SEARCH_INDEX_VERSION,
          'the re-index finishes',
        );
        assert.equal((await s.fhir('GET', `/Patient?family=Healthy&_id=${good}`, { token })).body.total, 1);
        const skipped = await s.app.db.query<{ id: string; version: number; reason: string }>('SELECT id, version, reason FROM search_reindex_skipped ORDER BY id');
        assert.deepEqual(skipped.rows.map((r) => r.id).sort(), [deepContent, notJson].sort());
        assert.ok(skipped.rows.every((r) => r.version === SEARCH_INDEX_VERSION && r.reason.length > 0), JSON.stringify(skipped.rows));
        const logged = lines.map((l) => JSON.parse(l) as { level: number; msg: string; skipped?: number });
        for (const id of [deepContent, notJson]) {
          assert.ok(logged.some((l) => l.level === 40 && l.msg.includes(`/${id}, which cannot be indexed`)), `a warning names ${id}`);
        }
        assert.equal(logged.find((l) => l.msg === 'search index: up to date')?.skipped, 2);
        assert.equal((await s.fhir('GET', `/Observation?_id=${deepUnit}`, { token })).body.total, 1);
      } finally {
        await second?.stop();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}
