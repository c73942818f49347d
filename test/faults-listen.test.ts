import assert from 'node:assert/strict';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import type { Bundle, Patient } from '@medplum/fhirtypes';
import pg from 'pg';
import { createMember, createProject, createTestDatabase, drivers, startServer, type TestProject, type TestServer } from './harness.js';
import { startServerProcess, type ServerProcess } from './support/server-process.js';

/**
 * No stale window while a node's listening connection is down or reconnecting
 * (docs/deployment.md, docs/auth.md#revocation, docs/rest.md#read-cache,
 * docs/rest.md#search-answer-cache). Two nodes on one
 * PostgreSQL, the second a process of its own. Its LISTEN backend is terminated, then the first
 * node removes a membership: from the first node's acknowledgement on, the second never answers
 * that member with 200 — not while it has not noticed the loss, not while it reconnects, not
 * after. Before, the second node kept its cached membership until the connection was back
 * (the issue saw 12 answers 200 over 95 ms).
 */
const PUBLIC_URL = 'http://lattice.test';

if (drivers.includes('pg')) {
  describe('the listening connection is lost (pg, two processes)', () => {
    let databaseUrl: string;
    let a: TestServer;
    let node: ServerProcess;
    let project: TestProject;
    let admin: pg.Client;

    before(async () => {
      databaseUrl = await createTestDatabase({ migrated: true });
      a = await startServer('pg', { databaseUrl, env: { LATTICE_PUBLIC_URL: PUBLIC_URL } });
      node = await startServerProcess({ DATABASE_URL: databaseUrl, LATTICE_PUBLIC_URL: PUBLIC_URL, LATTICE_ADMIN_PASSWORD: 'admin-password-123' });
      project = await createProject(a, 'Listen');
      admin = new pg.Client({ connectionString: databaseUrl });
      await admin.connect();
    });
    after(async () => {
      await admin?.end();
      await node?.stop();
      await a?.stop();
    });

    const onB = (path: string, token: string, init: RequestInit = {}) =>
      fetch(`${node.baseUrl}/fhir/R4${path}`, { ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/fhir+json' } });

    /** Terminates the second node's LISTEN backend (named by its process id, pg-listener.ts). */
    async function terminateListener(): Promise<void> {
      const res = await admin.query<{ ok: boolean }>(
        'SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1',
        [`lattice-listen:${node.child.pid}`],
      );
      assert.equal(res.rows.length, 1, 'the second node has one listening connection');
      assert.equal(res.rows[0].ok, true);
    }

    async function listening(): Promise<boolean> {
      const res = await admin.query('SELECT 1 FROM pg_stat_activity WHERE application_name = $1', [`lattice-listen:${node.child.pid}`]);
      return res.rows.length === 1;
    }

    test('a membership removed on one node while the other reconnects: never a 200 after the acknowledgement', async () => {
      const removed = await createMember(a, project.projectId);
      const other = await createMember(a, project.projectId);
      const created = await a.fhir<Patient>('POST', '/Patient', { token: other.token, body: { resourceType: 'Patient', name: [{ family: 'V1' }] } });
      const id = created.body.id as string;
      // The second node has the membership, the login and the row in memory.
      for (let i = 0; i < 3; i++) {
        assert.equal((await onB('/Patient?_count=1', removed.token)).status, 200);
        assert.equal((await onB(`/Patient/${id}`, other.token)).status, 200);
        assert.equal((await onB(`/Patient?_id=${id}`, other.token)).status, 200); // the search answer cache
      }

      await terminateListener();
      // Only a super admin may remove a membership through the FHIR API.
      const gone = await a.fhir('DELETE', `/ProjectMembership/${removed.membershipId}`, { token: a.adminToken });
      assert.equal(gone.status, 200, gone.text);
      const updated = await a.fhir<Patient>('PUT', `/Patient/${id}`, { token: other.token, body: { resourceType: 'Patient', id, name: [{ family: 'V2' }] } });
      assert.equal(updated.status, 200, updated.text);

      // From the acknowledgement on, through the reconnection and after it.
      const statuses: number[] = [];
      let reconnected = false;
      for (let i = 0; i < 200 && !(reconnected && i >= 40); i++) {
        statuses.push((await onB('/Patient?_count=1', removed.token)).status);
        const row = await onB(`/Patient/${id}`, other.token);
        assert.equal(row.status, 200);
        assert.equal(((await row.json()) as Patient).meta?.versionId, '2', `read ${i}: the second node answered a replaced version`);
        const found = (await (await onB(`/Patient?_id=${id}`, other.token)).json()) as Bundle;
        assert.equal(found.entry?.[0]?.resource?.meta?.versionId, '2', `search ${i}: the second node answered a kept search of a replaced version`);
        if (!reconnected) reconnected = await listening();
        await sleep(25);
      }
      assert.ok(reconnected, 'the second node listens again');
      assert.deepEqual(
        statuses.filter((s) => s !== 401),
        [],
        `answers for the removed member after the removal: ${statuses.join(' ')}`,
      );
      // The other member is served as before, by a node that listens again.
      assert.equal((await onB('/Patient?_count=1', other.token)).status, 200);
    });
  });
}

/**
 * A stand-in for a transaction-mode pooler as far as LISTEN is concerned: it forwards the
 * PostgreSQL protocol both ways but never passes a notification on (a pooler in transaction
 * mode hands the LISTEN to whichever server connection ran it, and its notifications reach no
 * client). Returns the URL that goes through it.
 */
async function notificationDroppingProxy(databaseUrl: string): Promise<{ url: string; server: Server }> {
  const target = new URL(databaseUrl);
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    client.pipe(upstream);
    let pending = Buffer.alloc(0);
    upstream.on('data', (data: Buffer) => {
      pending = Buffer.concat([pending, data]);
      // Every message from the server: a type byte and a length (which counts itself).
      while (pending.length >= 5) {
        const size = 1 + pending.readUInt32BE(1);
        if (pending.length < size) break;
        if (pending[0] !== 0x41) client.write(pending.subarray(0, size)); // 'A': NotificationResponse
        pending = pending.subarray(size);
      }
    });
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.on('close', () => sockets.forEach((s) => s.destroy()));
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as { port: number }).port);
  return { url: url.toString(), server };
}

if (drivers.includes('pg')) {
  describe('a connection that does not deliver notifications (pg)', () => {
    test('start is refused with the reason: LISTEN needs a session-mode connection', async () => {
      const proxy = await notificationDroppingProxy(await createTestDatabase({ migrated: true }));
      try {
        await assert.rejects(
          startServerProcess({ DATABASE_URL: proxy.url, LATTICE_DB_ACQUIRE_TIMEOUT: '1000', LATTICE_ADMIN_PASSWORD: 'admin-password-123' }),
          (err: Error) => {
            assert.match(err.message, /server exited \(1\) before listening/);
            assert.match(err.message, /LISTEN\/NOTIFY does not work through DATABASE_URL: a notification this connection sent to itself did not arrive within 1000 ms/);
            assert.match(err.message, /transaction-mode pooler \(e\.g\. PgBouncer with pool_mode=transaction\)/);
            return true;
          },
        );
      } finally {
        await new Promise((resolve) => proxy.server.close(resolve));
      }
    });
  });
}
