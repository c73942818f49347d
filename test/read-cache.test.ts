import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Patient } from '@medplum/fhirtypes';
import { SYSTEM_AUTH } from '../src/core/auth.js';
import type { Database } from '../src/core/database.js';
import { openPgDatabase } from '../src/storage/pg-database.js';
import { Repository, type ResourceRow } from '../src/storage/repository.js';
import { ResourceHooks } from '../src/storage/resource-hooks.js';
import { RowCache } from '../src/storage/row-cache.js';
import { createSearchIndex } from '../src/storage/search/sql-search-index.js';
import { createTestDatabase, drivers, startServer, type TestServer } from './harness.js';
import { startServerProcess, type ServerProcess } from './support/server-process.js';

/**
 * The read cache on PostgreSQL (storage/row-cache.ts, docs/rest.md#read-cache): two server
 * processes on one database — a write through either is seen by the very next read through
 * the other (the change feed, not this process's own emitter, must carry it: the second node
 * is a separate process) — and an update identical to a cached but already replaced version
 * is not mistaken for a no-op (no lost update).
 */

const PUBLIC_URL = 'http://lattice.test';

if (drivers.includes('pg')) {
  describe('read cache across two server processes (pg)', () => {
    let databaseUrl: string;
    let a: TestServer;
    let node: ServerProcess;
    let b: { url: string };
    let headers: Record<string, string>;

    before(async () => {
      databaseUrl = await createTestDatabase();
      a = await startServer('pg', { databaseUrl, env: { LATTICE_PUBLIC_URL: PUBLIC_URL } });
      // A second node: `lattice serve` as its own process on the same database.
      node = await startServerProcess({ DATABASE_URL: databaseUrl, LATTICE_PUBLIC_URL: PUBLIC_URL, LATTICE_ADMIN_PASSWORD: 'admin-password-123' });
      b = { url: `${node.baseUrl}/fhir/R4` };
      headers = { authorization: `Bearer ${a.memberToken}`, 'content-type': 'application/fhir+json' };
    });
    after(async () => {
      await node.stop();
      await a.stop();
    });

    const readB = async (id: string): Promise<Patient> => {
      const res = await fetch(`${b.url}/Patient/${id}`, { headers });
      assert.equal(res.status, 200);
      return (await res.json()) as Patient;
    };
    const putB = async (patient: Patient): Promise<Patient> => {
      const res = await fetch(`${b.url}/Patient/${patient.id}`, { method: 'PUT', headers, body: JSON.stringify(patient) });
      assert.equal(res.status, 200, await res.clone().text());
      return (await res.json()) as Patient;
    };

    test('an update through one process: the very next read through the other sees the new version', async () => {
      const created = await a.fhir<Patient>('POST', '/Patient', { body: { resourceType: 'Patient', name: [{ family: 'Round0' }] } });
      assert.equal(created.status, 201, created.text);
      const id = created.body.id as string;
      // Both nodes have read (and cached) the first version.
      assert.equal((await readB(id)).meta?.versionId, '1');
      assert.equal((await a.fhir<Patient>('GET', `/Patient/${id}`)).body.meta?.versionId, '1');

      for (let round = 1; round <= 20; round++) {
        const family = `Round${round}`;
        if (round % 2 === 1) {
          const updated = await a.fhir<Patient>('PUT', `/Patient/${id}`, { body: { resourceType: 'Patient', id, name: [{ family }] } });
          assert.equal(updated.status, 200, updated.text);
          const seen = await readB(id);
          assert.equal(seen.meta?.versionId, updated.body.meta?.versionId, `round ${round}: B read a stale version`);
          assert.equal(seen.name?.[0].family, family);
        } else {
          const updated = await putB({ resourceType: 'Patient', id, name: [{ family }] });
          const seen = await a.fhir<Patient>('GET', `/Patient/${id}`);
          assert.equal(seen.body.meta?.versionId, updated.meta?.versionId, `round ${round}: A read a stale version`);
          assert.equal(seen.body.name?.[0].family, family);
        }
      }
      // A delete through one node is a 410 through the other at once.
      assert.equal((await a.fhir('DELETE', `/Patient/${id}`)).status, 200);
      assert.equal((await fetch(`${b.url}/Patient/${id}`, { headers })).status, 410);
    });

    test('an update identical to a cached version another node has replaced is written, not taken for a no-op', async () => {
      // A node whose cache hears nothing: the moment before another node's NOTIFY arrives, held open.
      const db: Database = await openPgDatabase(databaseUrl);
      const deaf = new RowCache<ResourceRow>(true);
      deaf.listening(true);
      const repo = new Repository(db, SYSTEM_AUTH, new ResourceHooks([]), createSearchIndex(), deaf);
      try {
        const created = await a.fhir<Patient>('POST', '/Patient', { body: { resourceType: 'Patient', name: [{ family: 'Original' }] } });
        const id = created.body.id as string;
        const original = { resourceType: 'Patient', id, meta: { project: a.projectId }, name: [{ family: 'Original' }] } as Patient;
        assert.equal((await repo.read<Patient>('Patient', id)).name?.[0].family, 'Original'); // now cached
        const changed = await a.fhir<Patient>('PUT', `/Patient/${id}`, { body: { resourceType: 'Patient', id, name: [{ family: 'Changed' }] } });
        assert.equal(changed.body.meta?.versionId, '2');
        // Writing back the original content is a real change against version 2.
        const result = await repo.update(original);
        assert.equal(result.resource.meta?.versionId, '3');
        const now = await a.fhir<Patient>('GET', `/Patient/${id}`);
        assert.equal(now.body.meta?.versionId, '3');
        assert.equal(now.body.name?.[0].family, 'Original');
      } finally {
        await db.close();
      }
    });
  });
}
