import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { createClient, createMember, createProject, drivers, ooText, startServer, tokenRequest, type TestProject, type TestServer } from './harness.js';

/**
 * Client application secrets rotate and may expire (docs/auth.md#client-secrets). Before, a
 * client's secret could not be replaced and never expired (a demoted admin's client kept
 * working for ever).
 */
for (const driver of drivers) {
  describe(`client secrets (${driver})`, () => {
    let server: TestServer;
    let project: TestProject;
    before(async () => {
      server = await startServer(driver);
      project = await createProject(server, 'Clients');
    });
    after(() => server.stop());

    const credentials = (clientId: string, secret: string) => tokenRequest(server, { grant_type: 'client_credentials', client_id: clientId, client_secret: secret });
    const rotate = (clientId: string, body: unknown = {}, token = project.adminToken, projectId = project.projectId) =>
      server.request('POST', `/admin/projects/${projectId}/client/${clientId}/secret`, { body, contentType: 'application/json', token });

    function assertRefused(res: { status: number; body: { error?: string; error_description?: string } }): void {
      assert.equal(res.status, 401);
      assert.deepEqual(res.body, { error: 'invalid_client', error_description: 'Invalid client credentials' });
    }

    test('rotating: the new secret works, the rotated-out one fails at the token endpoint', async () => {
      const client = await createClient(server, project.projectId, { token: project.adminToken });
      const res = await rotate(client.clientId);
      assert.equal(res.status, 200, res.text);
      assert.match(res.headers.get('content-type') ?? '', /application\/fhir\+json/);
      assert.equal(res.body.resourceType, 'ClientApplication');
      assert.equal(res.body.id, client.clientId);
      assert.equal(typeof res.body.secret, 'string');
      assert.notEqual(res.body.secret, client.secret);
      assert.equal(res.body.secretExpiresAt, undefined, 'secrets do not expire unless configured');
      assert.equal((await credentials(client.clientId, res.body.secret)).status, 200);
      assertRefused(await credentials(client.clientId, client.secret));
      // The secret is never stored in the resource.
      const read = await server.fhir('GET', `/ClientApplication/${client.clientId}`, { token: project.adminToken });
      assert.equal(read.body.secret, undefined);
    });

    test('with a grace period both secrets work until it ends', async () => {
      const client = await createClient(server, project.projectId, { token: project.adminToken });
      const res = await rotate(client.clientId, { gracePeriod: 2 });
      assert.equal(res.status, 200, res.text);
      assert.equal((await credentials(client.clientId, client.secret)).status, 200);
      assert.equal((await credentials(client.clientId, res.body.secret)).status, 200);
      await sleep(2500);
      assertRefused(await credentials(client.clientId, client.secret));
      assert.equal((await credentials(client.clientId, res.body.secret)).status, 200);
    });

    test('who may rotate: 403 for plain members and other projects’ admins, 404 for an unknown client, 400 for a bad grace period', async () => {
      const client = await createClient(server, project.projectId, { token: project.adminToken });
      const member = await createMember(server, project.projectId);
      const other = await createProject(server, 'Other clients');
      assert.equal((await rotate(client.clientId, {}, member.token)).status, 403);
      assert.equal((await rotate(client.clientId, {}, other.adminToken)).status, 403);
      const elsewhere = await rotate(client.clientId, {}, other.adminToken, other.projectId);
      assert.equal(elsewhere.status, 404, 'a client of another project is unknown here');
      assert.equal((await rotate('no-such-client')).status, 404);
      const bad = await rotate(client.clientId, { gracePeriod: -1 });
      assert.equal(bad.status, 400);
      assert.equal(ooText(bad.body), 'gracePeriod must be a non-negative integer (seconds)');
      assert.deepEqual(bad.body.issue[0].expression, ['gracePeriod']);
      assert.equal((await rotate(client.clientId, undefined, null as unknown as string)).status, 401);
      assert.equal((await credentials(client.clientId, client.secret)).status, 200, 'refused rotations changed nothing');
    });

    test('LATTICE_CLIENT_SECRET_LIFETIME: a secret expires, a rotated one gets a new lifetime', async () => {
      const expiring = await startServer(driver, { env: { LATTICE_CLIENT_SECRET_LIFETIME: '2' } });
      try {
        const p = await createProject(expiring, 'Expiring');
        const created = await expiring.request('POST', `/admin/projects/${p.projectId}/client`, { body: { name: 'short' }, contentType: 'application/json', token: p.adminToken });
        assert.equal(created.status, 201, created.text);
        const expiresAt = Date.parse(created.body.secretExpiresAt);
        assert.ok(expiresAt > Date.now() && expiresAt <= Date.now() + 3000, created.body.secretExpiresAt);
        const tokenFor = (secret: string) => tokenRequest(expiring, { grant_type: 'client_credentials', client_id: created.body.id, client_secret: secret });
        assert.equal((await tokenFor(created.body.secret)).status, 200);
        await sleep(2500);
        const expired = await tokenFor(created.body.secret);
        assert.equal(expired.status, 401);
        assert.deepEqual(expired.body, { error: 'invalid_client', error_description: 'Invalid client credentials' });
        const rotated = await expiring.request('POST', `/admin/projects/${p.projectId}/client/${created.body.id}/secret`, { body: {}, contentType: 'application/json', token: p.adminToken });
        assert.equal(rotated.status, 200, rotated.text);
        assert.ok(Date.parse(rotated.body.secretExpiresAt) > Date.now());
        assert.equal((await tokenFor(rotated.body.secret)).status, 200);
      } finally {
        await expiring.stop();
      }
    });
  });
}
