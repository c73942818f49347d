import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createProject, drivers, ooText, startServer, type TestProject, type TestServer } from './harness.js';

/** System history, `_total`, JSON-only content negotiation and the CapabilityStatement (docs/rest.md#system-history). */
for (const driver of drivers) {
  describe(`system-level REST (${driver})`, () => {
    let server: TestServer;
    let project: TestProject;
    before(async () => {
      server = await startServer(driver);
      project = await createProject(server, 'System level');
    });
    after(() => server.stop());

    test('GET [base]/_history lists every visible type, newest first, scoped to the caller', async () => {
      const token = project.adminToken;
      const p = (await server.fhir('POST', '/Patient', { token, body: { resourceType: 'Patient' } })).body;
      const o = (await server.fhir('POST', '/Observation', { token, body: { resourceType: 'Observation', status: 'final', code: { text: 'h' } } })).body;
      const other = await createProject(server, 'System level other');
      await server.fhir('POST', '/Patient', { token: other.adminToken, body: { resourceType: 'Patient' } });
      const res = await server.fhir('GET', '/_history?_count=100', { token });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.type, 'history');
      const urls: string[] = res.body.entry.map((e: { fullUrl: string }) => e.fullUrl);
      assert.ok(urls.indexOf(`${server.fhirUrl}/Observation/${o.id}`) < urls.indexOf(`${server.fhirUrl}/Patient/${p.id}`));
      assert.ok(res.body.entry.every((e: { resource?: { meta?: { project?: string } } }) => !e.resource?.meta?.project || e.resource.meta.project === project.projectId));
      assert.equal(res.body.link[0].url, `${server.fhirUrl}/_history?_count=100`);
      assert.equal((await server.fhir('POST', '/_history', { token, body: {} })).status, 405);
    });

    test('_total=none leaves the total out; estimate/accurate give it; other values → 400', async () => {
      const token = project.adminToken;
      assert.equal((await server.fhir('GET', '/Patient?_total=none', { token })).body.total, undefined);
      assert.equal(typeof (await server.fhir('GET', '/Patient?_total=accurate', { token })).body.total, 'number');
      assert.equal(typeof (await server.fhir('GET', '/Patient?_total=estimate', { token })).body.total, 'number');
      const bad = await server.fhir('GET', '/Patient?_total=maybe', { token });
      assert.equal(bad.status, 400);
      assert.equal(ooText(bad.body), "Invalid value 'maybe' for _total");
    });

    test('asking for XML (Accept or _format) → 406; JSON or wildcards are fine', async () => {
      const token = project.adminToken;
      const accept = await server.fhir('GET', '/Patient', { token, headers: { accept: 'application/fhir+xml' } });
      assert.equal(accept.status, 406);
      assert.equal(accept.body.issue[0].code, 'not-supported');
      assert.equal(ooText(accept.body), 'XML is not supported: this server answers application/fhir+json only');
      assert.equal((await server.fhir('GET', '/metadata?_format=application/fhir%2Bxml')).status, 406);
      assert.equal((await server.fhir('GET', '/Patient', { token, headers: { accept: 'application/fhir+xml, application/fhir+json' } })).status, 200);
      assert.equal((await server.fhir('GET', '/Patient', { token, headers: { accept: 'application/xml, */*;q=0.1' } })).status, 200);
    });

    test('the CapabilityStatement lists patch, conditional interactions, batch, transaction and system history', async () => {
      const cs = (await server.fhir('GET', '/metadata')).body;
      assert.deepEqual(cs.format, ['application/fhir+json', 'json']);
      const patient = cs.rest[0].resource.find((r: { type: string }) => r.type === 'Patient');
      assert.ok(patient.interaction.some((i: { code: string }) => i.code === 'patch'));
      assert.equal(patient.conditionalCreate, true);
      assert.equal(patient.conditionalUpdate, true);
      assert.equal(patient.conditionalDelete, 'single');
      assert.deepEqual(cs.rest[0].interaction.map((i: { code: string }) => i.code), ['transaction', 'batch', 'search-system', 'history-system']);
    });
  });
}
