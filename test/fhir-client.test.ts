import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Patient } from '@medplum/fhirtypes';
import { Client, type PaginationParams } from 'fhir-kit-client';
import { drivers, startServer, type TestServer } from './harness.js';

/** A searchset page as fhir-kit hands it back (its entries' resources have ids). */
type KitBundle = PaginationParams['bundle'] & { total?: number; entry: { resource: { id: string } }[] };

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
        const created = (await client.create({ resourceType: 'Patient', body: { resourceType: 'Patient', name: [{ family }] } })) as Patient;
        assert.equal(created.resourceType, 'Patient');
        ids.push(created.id!);
      }
      const read = (await client.read({ resourceType: 'Patient', id: ids[0] })) as Patient;
      assert.equal(read.name?.[0].family, family);

      const updated = (await client.update({ resourceType: 'Patient', id: ids[0], body: { ...read, gender: 'female' } })) as Patient;
      assert.equal(updated.meta?.versionId, '2');

      let page = (await client.search({ resourceType: 'Patient', searchParams: { _id: ids.join(','), _count: '2' } })) as KitBundle;
      assert.equal(page.total, 5);
      const seen = page.entry.map((e) => e.resource.id);
      for (;;) {
        const next = client.nextPage({ bundle: page });
        if (!next) break;
        page = (await next) as KitBundle;
        seen.push(...page.entry.map((e) => e.resource.id));
      }
      assert.deepEqual([...seen].sort(), [...ids].sort());
    });

    test('$everything with the client\'s default call (POST without a body), Patient and Encounter', async () => {
      const patient = (await client.create({ resourceType: 'Patient', body: { resourceType: 'Patient', name: [{ family: 'KitEverything' }] } })) as Patient;
      const org = (await client.create({ resourceType: 'Organization', body: { resourceType: 'Organization', name: 'Kit clinic' } })) as unknown as { id: string };
      const encounter = (await client.create({
        resourceType: 'Encounter',
        body: { resourceType: 'Encounter', status: 'finished', class: { code: 'AMB' }, subject: { reference: `Patient/${patient.id}` }, serviceProvider: { reference: `Organization/${org.id}` } },
      })) as unknown as { id: string };
      type Page = { entry: Array<{ resource: { resourceType: string; id: string }; search: { mode: string } }> };
      const everything = (await client.operation({ name: '$everything', resourceType: 'Patient', id: patient.id })) as unknown as Page;
      assert.deepEqual(everything.entry.map((e) => `${e.search.mode} ${e.resource.resourceType}`).sort(), ['include Organization', 'match Encounter', 'match Patient']);
      const byEncounter = (await client.operation({ name: 'everything', resourceType: 'Encounter', id: encounter.id })) as unknown as Page;
      assert.deepEqual(byEncounter.entry.map((e) => e.resource.resourceType).sort(), ['Encounter', 'Organization', 'Patient']);
    });

    test('reads the CapabilityStatement', async () => {
      const cs = await client.capabilityStatement();
      assert.equal(cs.resourceType, 'CapabilityStatement');
    });
  });
}
