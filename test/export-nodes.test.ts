import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, test } from 'node:test';
import { createTestDatabase, drivers, startServer, type TestServer } from './harness.js';
import { call, exportedIds, kickOff, manifestOf } from './support/bulk-export.js';

/**
 * Two API nodes on one PostgreSQL (docs/export.md#how-a-job-runs): both run an export runner,
 * a job runs on one of them at a time, and when the node running it stops in the middle, the
 * other takes it over once the lease has run out — every resource exported exactly once.
 */
const PUBLIC_URL = 'http://lattice.test';
const RESOURCES = 200;

if (drivers.includes('pg')) {
  describe('$export on two nodes (pg)', () => {
    test('with two live nodes a job runs once; the node running it stopping mid-job leaves it to the other', async () => {
      const databaseUrl = await createTestDatabase({ migrated: true });
      const env = { LATTICE_PUBLIC_URL: PUBLIC_URL, LATTICE_EXPORT_PAGE: '1', LATTICE_EXPORT_LEASE_MS: '1000' };
      const a: TestServer = await startServer('pg', { databaseUrl, env });
      let b: TestServer | undefined;
      let aStopped = false;
      try {
        b = await startServer('pg', { databaseUrl, env });
        const token = a.adminToken as string;
        const entry = Array.from({ length: RESOURCES }, (_, i) => ({ resource: { resourceType: 'Observation', status: 'final', code: { text: `n${i}` } }, request: { method: 'POST', url: 'Observation' } }));
        const loaded = await call(a.baseUrl, 'POST', '/fhir/R4', { token, body: { resourceType: 'Bundle', type: 'transaction', entry } });
        assert.equal(loaded.status, 200, loaded.text);
        const created = (loaded.body.entry as Array<{ response: { location: string } }>).map((e) => /Observation\/([^/]+)/.exec(e.response.location)?.[1] ?? '').sort();

        const statusPath = new URL(await kickOff(a.baseUrl, token, '/$export?_type=Observation')).pathname;
        // Node B answers the status of a job node A (or B) runs.
        for (;;) {
          const res = await call(b.baseUrl, 'GET', statusPath, { token });
          assert.equal(res.status, 202, `the export finished before node A stopped: ${res.text}`);
          if (/^[1-9]\d* resources exported/.test(res.headers.get('x-progress') ?? '')) break;
          await sleep(5);
        }
        await a.stop();
        aStopped = true;
        const manifest = await manifestOf(`${b.baseUrl}${statusPath}`, token);
        for (const file of manifest.output) file.url = b.baseUrl + new URL(file.url).pathname;
        const exported = await exportedIds(manifest, token);
        assert.deepEqual(exported.Observation, created, 'every resource exactly once');
      } finally {
        await b?.stop();
        if (!aStopped) await a.stop();
      }
    });

    test('a job whose node stopped is taken over by a node started later (its lease ran out)', async () => {
      const databaseUrl = await createTestDatabase({ migrated: true });
      const env = { LATTICE_PUBLIC_URL: PUBLIC_URL, LATTICE_EXPORT_PAGE: '1', LATTICE_EXPORT_LEASE_MS: '1000' };
      const a: TestServer = await startServer('pg', { databaseUrl, env });
      let b: TestServer | undefined;
      try {
        const token = a.adminToken as string;
        const entry = Array.from({ length: RESOURCES }, (_, i) => ({ resource: { resourceType: 'Observation', status: 'final', code: { text: `n${i}` } }, request: { method: 'POST', url: 'Observation' } }));
        const loaded = await call(a.baseUrl, 'POST', '/fhir/R4', { token, body: { resourceType: 'Bundle', type: 'transaction', entry } });
        const created = (loaded.body.entry as Array<{ response: { location: string } }>).map((e) => /Observation\/([^/]+)/.exec(e.response.location)?.[1] ?? '').sort();
        const statusPath = new URL(await kickOff(a.baseUrl, token, '/$export?_type=Observation')).pathname;
        for (;;) {
          const res = await call(a.baseUrl, 'GET', statusPath, { token });
          assert.equal(res.status, 202, `the export finished before node A stopped: ${res.text}`);
          if (/^[1-9]\d* resources exported/.test(res.headers.get('x-progress') ?? '')) break;
          await sleep(5);
        }
        await a.stop();
        b = await startServer('pg', { databaseUrl, env });
        const manifest = await manifestOf(`${b.baseUrl}${statusPath}`, token);
        for (const file of manifest.output) file.url = b.baseUrl + new URL(file.url).pathname;
        assert.deepEqual((await exportedIds(manifest, token)).Observation, created, 'every resource exactly once');
        const [job] = (await b.app.db.query<{ attempts: number }>('SELECT attempts FROM export_job WHERE id = $1', [statusPath.split('/').pop()])).rows;
        assert.equal(job.attempts, 2, 'claimed by node A, then by node B');
      } finally {
        await b?.stop();
      }
    });
  });
}
