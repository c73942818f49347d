import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MedplumClient, MemoryStorage } from '@medplum/core';
import type { Patient } from '@medplum/fhirtypes';
import { createClient, createProject, drivers, pkcePair, startServer, type TestServer } from './harness.js';

/**
 * A real client: @medplum/core's MedplumClient against the running server (docs/auth.md:
 * "compatible with the login flow of MedplumClient").
 */
for (const driver of drivers) {
  describe(`MedplumClient (${driver})`, () => {
    let server: TestServer;
    const savedSessionStorage = (globalThis as { sessionStorage?: unknown }).sessionStorage;
    before(async () => {
      server = await startServer(driver);
    });
    after(async () => {
      (globalThis as { sessionStorage?: unknown }).sessionStorage = savedSessionStorage;
      await server.stop();
    });

    const newClient = () => new MedplumClient({ baseUrl: `${server.baseUrl}/`, fetch, storage: undefined });

    test('startLogin (PKCE S256) + processCode, then create, read and search', async () => {
      const p = await createProject(server, 'Medplum users');
      const medplum = newClient();
      const pkce = pkcePair();
      // processCode reads the verifier from sessionStorage, as in a browser.
      const session = new MemoryStorage();
      session.setItem('codeVerifier', pkce.verifier);
      (globalThis as { sessionStorage?: unknown }).sessionStorage = session;

      const login = await medplum.startLogin({
        email: p.adminEmail,
        password: p.adminPassword,
        codeChallenge: pkce.challenge,
        codeChallengeMethod: 'S256',
      });
      assert.equal(typeof login.code, 'string');
      const profile = await medplum.processCode(login.code as string);
      assert.equal(profile.resourceType, 'Practitioner');
      assert.equal(medplum.getActiveLogin()?.project?.reference, `Project/${p.projectId}`);

      const created = await medplum.createResource<Patient>({ resourceType: 'Patient', name: [{ family: 'Medplum', given: ['Core'] }] });
      assert.ok(created.id);
      assert.equal((created.meta as { project?: string }).project, p.projectId);
      const read = await medplum.readResource('Patient', created.id);
      assert.equal(read.name?.[0]?.family, 'Medplum');
      const found = await medplum.searchResources('Patient', { _id: created.id });
      assert.equal(found.length, 1);
      assert.equal(found[0].id, created.id);
    });

    test('a wrong verifier fails the token exchange', async () => {
      const p = await createProject(server, 'Medplum wrong verifier');
      const medplum = newClient();
      const session = new MemoryStorage();
      session.setItem('codeVerifier', pkcePair().verifier);
      (globalThis as { sessionStorage?: unknown }).sessionStorage = session;
      const login = await medplum.startLogin({
        email: p.adminEmail,
        password: p.adminPassword,
        codeChallenge: pkcePair().challenge,
        codeChallengeMethod: 'S256',
      });
      await assert.rejects(medplum.processCode(login.code as string));
      assert.equal(medplum.getAccessToken(), undefined);
    });

    test('startClientLogin (client credentials) acts within the client’s project', async () => {
      const a = await createProject(server, 'Medplum client A');
      const b = await createProject(server, 'Medplum client B');
      const inB = await server.fhir('POST', '/Patient', { token: b.adminToken, body: { resourceType: 'Patient', name: [{ family: 'OnlyB' }] } });
      const client = await createClient(server, a.projectId, { token: a.adminToken });
      const medplum = newClient();
      await medplum.startClientLogin(client.clientId, client.secret);
      const created = await medplum.createResource<Patient>({ resourceType: 'Patient', name: [{ family: 'ViaClient' }] });
      assert.equal((created.meta as { project?: string }).project, a.projectId);
      assert.deepEqual(
        (await medplum.searchResources('Patient', { name: 'OnlyB' })).map((r) => r.id),
        [],
      );
      await assert.rejects(medplum.readResource('Patient', inB.body.id));
    });
    test('bulkExport: kick-off, polling and the manifest of a system export (docs/export.md)', async () => {
      const p = await createProject(server, 'Medplum bulk export');
      const medplum = newClient();
      medplum.setAccessToken(p.adminToken);
      const created = [];
      for (const family of ['Bulk', 'Export']) created.push((await medplum.createResource<Patient>({ resourceType: 'Patient', name: [{ family }] })).id);
      const manifest = await medplum.bulkExport('', 'Patient', undefined, { pollStatusOnAccepted: true, pollStatusPeriod: 100 });
      assert.equal(manifest.requiresAccessToken, true);
      assert.deepEqual(manifest.output?.map((o) => o.type), ['Patient']);
      const file = await fetch(manifest.output?.[0]?.url ?? '', { headers: { authorization: `Bearer ${p.adminToken}` } });
      const ids = (await file.text()).trim().split('\n').map((line) => (JSON.parse(line) as Patient).id);
      assert.deepEqual(ids.sort(), created.sort());
    });
  });
}
