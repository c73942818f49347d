import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Observation, Subscription } from '@medplum/fhirtypes';
import { createMember, createProject, createTestDatabase, drivers, startServer, type TestMember, type TestServer } from './harness.js';
import { startServerProcess, type ServerProcess } from './support/server-process.js';
import { WebhookListener } from './support/webhook-listener.js';

/**
 * Subscription delivery across restarts and across nodes (docs/rest.md#subscriptions): the
 * outbox is in the database, so notifications recorded while the endpoint was down are
 * delivered by the next process; with two nodes on one PostgreSQL every notification is sent
 * once, whichever node recorded it.
 */
const ENV = { LATTICE_SUBSCRIPTION_ALLOW_PRIVATE: 'true', LATTICE_SUBSCRIPTION_RETRY_MS: '20', LATTICE_SUBSCRIPTION_RETRY_MAX_MS: '100', LATTICE_SUBSCRIPTION_POLL_MS: '200' };

const observation = (code: string, value: number): Observation => ({ resourceType: 'Observation', status: 'final', code: { coding: [{ code }] }, valueQuantity: { value } });

const call = async <T>(base: string, method: string, path: string, token: string, body?: unknown): Promise<{ status: number; body: T }> => {
  const res = await fetch(`${base}/fhir/R4${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/fhir+json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as T };
};

/** Ids of the Observations `listener` received, in order. */
const receivedIds = (listener: WebhookListener) => listener.received.map((r) => (JSON.parse(r.body) as Observation).id);

for (const driver of drivers) {
  describe(`subscriptions across a restart (${driver})`, () => {
    let listener: WebhookListener;
    let dir: string;
    before(async () => {
      listener = await new WebhookListener().start();
      dir = mkdtempSync(join(tmpdir(), 'lattice-subscriptions-'));
    });
    after(async () => {
      await listener?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    test('notifications recorded while the endpoint was down are delivered once by the restarted server', async () => {
      const storage = driver === 'pg' ? { databaseUrl: await createTestDatabase({ migrated: true }) } : { dataDir: join(dir, 'data') };
      // One public URL for both processes: the member's token (its issuer) stays valid across the restart.
      const env = { ...ENV, LATTICE_PUBLIC_URL: 'http://lattice.test' };
      let server: TestServer | undefined = await startServer(driver, { ...storage, env });
      const token = server.memberToken as string;
      listener.failNext(1_000_000);
      const ids: string[] = [];
      try {
        const sub = await server.fhir<Subscription>('POST', '/Subscription', {
          body: { resourceType: 'Subscription', status: 'requested', reason: 'restart', criteria: 'Observation?code=7777-7', channel: { type: 'rest-hook', endpoint: `${listener.url}/r`, payload: 'application/fhir+json' } },
        });
        assert.equal(sub.status, 201);
        for (let i = 0; i < 3; i++) ids.push((await server.fhir<Observation>('POST', '/Observation', { body: observation('7777-7', i) })).body.id as string);
        // The endpoint has refused at least one attempt: delivery was tried, and failed.
        while (listener.refused === 0) await new Promise((r) => setTimeout(r, 20));
        await server.stop();
        server = undefined;
        listener.failNext(0);
        server = await startServer(driver, { ...storage, env });
        await listener.waitFor(3);
        // A write after the restart comes after the three.
        const later = await call<Observation>(server.baseUrl, 'POST', '/Observation', token, observation('7777-7', 9));
        assert.equal(later.status, 201);
        ids.push(later.body.id as string);
        await listener.waitFor(4);
        assert.deepEqual(receivedIds(listener), ids);
      } finally {
        listener.failNext(0);
        await server?.stop();
      }
    });
  });
}

if (drivers.includes('pg')) {
  describe('subscriptions on two nodes of one PostgreSQL (pg)', () => {
    let a: TestServer;
    let b: ServerProcess;
    let member: TestMember;
    let listener: WebhookListener;

    before(async () => {
      listener = await new WebhookListener().start();
      const databaseUrl = await createTestDatabase({ migrated: true });
      a = await startServer('pg', { databaseUrl, env: { ...ENV, LATTICE_PUBLIC_URL: 'http://lattice.test' } });
      b = await startServerProcess({ ...ENV, DATABASE_URL: databaseUrl, LATTICE_PUBLIC_URL: 'http://lattice.test', LATTICE_ADMIN_PASSWORD: 'admin-password-123' });
      const project = await createProject(a, 'Two nodes');
      member = await createMember(a, project.projectId);
    });
    after(async () => {
      await b?.stop();
      await a?.stop();
      await listener?.stop();
    });

    test('a Subscription made on one node sees writes through the other at once, and each notification is sent once', async () => {
      const sub = await call<Subscription>(a.baseUrl, 'POST', '/Subscription', member.token, {
        resourceType: 'Subscription',
        status: 'requested',
        reason: 'nodes',
        criteria: 'Observation?code=8888-8',
        channel: { type: 'rest-hook', endpoint: `${listener.url}/n`, payload: 'application/fhir+json' },
      });
      assert.equal(sub.status, 201);
      const bases = [b.baseUrl, a.baseUrl]; // the first write goes through the node that did not store the Subscription
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) {
        const created = await call<Observation>(bases[i % 2], 'POST', '/Observation', member.token, observation('8888-8', i));
        assert.equal(created.status, 201);
        ids.push(created.body.id as string);
      }
      await listener.waitFor(20);
      // Sent after the twenty: once it arrives, none of them is pending anywhere any more.
      ids.push((await call<Observation>(bases[0], 'POST', '/Observation', member.token, observation('8888-8', 99))).body.id as string);
      await listener.waitFor(21);
      assert.deepEqual(receivedIds(listener), ids);
      const status = await call<{ parameter: Array<{ name: string; part?: Array<{ name: string; valueCode?: string; valueInteger?: number }> }> }>(
        a.baseUrl, 'GET', `/Subscription/${sub.body.id}/$status?_count=100`, member.token,
      );
      const notifications = status.body.parameter.filter((p) => p.name === 'notification');
      assert.equal(notifications.length, 21);
      for (const n of notifications) {
        assert.equal(n.part?.find((p) => p.name === 'state')?.valueCode, 'sent');
        assert.equal(n.part?.find((p) => p.name === 'attempts')?.valueInteger, 1);
      }
    });
  });
}
