import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { createTestDatabase, drivers, loginAs, startServer } from './harness.js';

for (const driver of drivers) {
  describe(`restart (${driver})`, () => {
    test('data written before a restart on the same storage is all there after it', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'lattice-restart-'));
      const storage = driver === 'pg' ? { databaseUrl: await createTestDatabase() } : { dataDir: join(dir, 'data') };
      try {
        const first = await startServer(driver, storage);
        const created = await first.fhir('POST', '/Patient', { body: { resourceType: 'Patient', name: [{ family: 'Persist' }] } });
        assert.equal(created.status, 201);
        const updated = await first.fhir('PUT', `/Patient/${created.body.id}`, { body: { ...created.body, gender: 'male' } });
        assert.equal(updated.status, 200);
        await first.stop();

        const second = await startServer(driver, storage);
        try {
          // Read as the member who wrote it, logged in again (the second start makes a default
          // member of its own, in another project, and listens on another port: another issuer).
          const writer = first.member!;
          const token = await loginAs(second, writer.email, writer.password, first.projectId);
          const read = await second.fhir('GET', `/Patient/${created.body.id}`, { token });
          assert.equal(read.status, 200);
          assert.equal(read.body.gender, 'male');
          assert.equal(read.body.meta.versionId, '2');
          const v1 = await second.fhir('GET', `/Patient/${created.body.id}/_history/1`, { token });
          assert.equal(v1.status, 200);
          assert.equal(v1.body.gender, undefined);
        } finally {
          await second.stop();
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}
