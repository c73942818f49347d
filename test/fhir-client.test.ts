import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client } from 'fhir-kit-client';
import { drivers, startServer, type TestServer } from './harness.js';

// A real, independent FHIR client against the running server.
for (const driver of drivers) {
  describe(`fhir-kit-client (${driver})`, () => {
    let server: TestServer;
    let client: Client;
    before(async () => {
      server = await startServer(driver);
      client = new Client({ baseUrl: server.fhirUrl, ...(server.adminToken ? { bearerToken: server.adminToken } : {}) });
    });
    after(() => server.stop());

    test('creates, reads, updates, searches and follows next links', async () => {
      const family = `Kit${Date.now()}`;
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const created = (await client.create({ resourceType: 'Patient', body: { resourceType: 'Patient', name: [{ family }] } })) as any;
        assert.equal(created.resourceType, 'Patient');
        ids.push(created.id);
      }
      const read = (await client.read({ resourceType: 'Patient', id: ids[0] })) as any;
      assert.equal(read.name[0].family, family);

      const updated = (await client.update({ resourceType: 'Patient', id: ids[0], body: { ...read, gender: 'female' } })) as any;
      assert.equal(updated.meta.versionId, '2');

      let page = (await client.search({ resourceType: 'Patient', searchParams: { _id: ids.join(','), _count: '2' } })) as any;
      assert.equal(page.total, 5);
      const seen: string[] = page.entry.map((e: any) => e.resource.id);
      for (;;) {
        const next = client.nextPage({ bundle: page });
        if (!next) break;
        page = await next;
        seen.push(...page.entry.map((e: any) => e.resource.id));
      }
      assert.deepEqual([...seen].sort(), [...ids].sort());
    });

    test('reads the CapabilityStatement', async () => {
      const cs = (await client.capabilityStatement()) as any;
      assert.equal(cs.resourceType, 'CapabilityStatement');
    });
  });
}
