import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Patient } from '@medplum/fhirtypes';
import { createMember, createProject, createTestDatabase, drivers, startServer, type TestMember, type TestProject, type TestServer } from './harness.js';
import { startServerProcess, type ServerProcess } from './support/server-process.js';

/**
 * Three API nodes on one PostgreSQL, as behind a load balancer (docs/deployment.md): this test's
 * process and two `lattice serve` processes. Under a steady stream of writes through every
 * node, a write acknowledged by one node is what the very next read through any node answers:
 * rows (read cache), memberships (access state) — no node answers stale after an acknowledged
 * write.
 */
const PUBLIC_URL = 'http://lattice.test';

if (drivers.includes('pg')) {
  describe('three nodes on one PostgreSQL (pg)', () => {
    let a: TestServer;
    let others: ServerProcess[] = [];
    let project: TestProject;
    let member: TestMember;
    let bases: string[];

    before(async () => {
      const databaseUrl = await createTestDatabase({ migrated: true });
      a = await startServer('pg', { databaseUrl, env: { LATTICE_PUBLIC_URL: PUBLIC_URL } });
      const env = { DATABASE_URL: databaseUrl, LATTICE_PUBLIC_URL: PUBLIC_URL, LATTICE_ADMIN_PASSWORD: 'admin-password-123' };
      others = await Promise.all([startServerProcess(env), startServerProcess(env)]);
      bases = [a.baseUrl, ...others.map((n) => n.baseUrl)];
      project = await createProject(a, 'Three nodes');
      member = await createMember(a, project.projectId);
    });
    after(async () => {
      await Promise.all(others.map((n) => n.stop()));
      await a?.stop();
    });

    const call = async (node: number, method: string, path: string, token: string, body?: unknown) => {
      const res = await fetch(`${bases[node]}/fhir/R4${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/fhir+json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Patient & { issue?: unknown } };
    };

    test('under writes through every node, no node answers a row older than an acknowledged write', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const created = await call(i, 'POST', '/Patient', member.token, { resourceType: 'Patient', name: [{ family: `P${i}` }] });
        assert.equal(created.status, 201);
        ids.push(created.body.id as string);
      }
      // Every node reads (and caches) every patient.
      for (let n = 0; n < 3; n++) for (const id of ids) assert.equal((await call(n, 'GET', `/Patient/${id}`, member.token)).status, 200);

      // Background writes through every node: notifications keep arriving while the checks run.
      let writing = true;
      const noise = (async () => {
        for (let k = 0; writing; k++) {
          await call(k % 3, 'POST', '/Patient', member.token, { resourceType: 'Patient', name: [{ family: `Noise${k}` }] });
        }
      })();
      try {
        for (let round = 0; round < 30; round++) {
          const writer = round % 3;
          const id = ids[(round * 7) % 3];
          const updated = await call(writer, 'PUT', `/Patient/${id}`, member.token, { resourceType: 'Patient', id, name: [{ family: `Round${round}` }] });
          assert.equal(updated.status, 200);
          const version = updated.body.meta?.versionId;
          const reads = await Promise.all([0, 1, 2].map((n) => call(n, 'GET', `/Patient/${id}`, member.token)));
          reads.forEach((read, n) => {
            assert.equal(read.body.meta?.versionId, version, `round ${round}: node ${n} answered version ${read.body.meta?.versionId} after version ${version} was acknowledged by node ${writer}`);
            assert.equal(read.body.name?.[0].family, `Round${round}`);
          });
        }
      } finally {
        writing = false;
        await noise;
      }
    });

    test('a membership removed through one node: every node refuses its token from the acknowledgement on', async () => {
      const removed = await createMember(a, project.projectId);
      for (let n = 0; n < 3; n++) assert.equal((await call(n, 'GET', '/Patient?_count=1', removed.token)).status, 200);
      let writing = true;
      const noise = (async () => {
        for (let k = 0; writing; k++) await call(k % 3, 'POST', '/Patient', member.token, { resourceType: 'Patient', name: [{ family: `Noise${k}` }] });
      })();
      try {
        // Only a super admin may remove a membership through the FHIR API.
        const gone = await a.fhir('DELETE', `/ProjectMembership/${removed.membershipId}`, { token: a.adminToken });
        assert.equal(gone.status, 200, gone.text);
        const statuses = await Promise.all([0, 1, 2].map(async (n) => (await call(n, 'GET', '/Patient?_count=1', removed.token)).status));
        assert.deepEqual(statuses, [401, 401, 401]);
      } finally {
        writing = false;
        await noise;
      }
    });
  });
}
