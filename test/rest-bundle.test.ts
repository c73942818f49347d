import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { MedplumClient } from '@medplum/core';
import type { Bundle } from '@medplum/fhirtypes';
import { Client } from 'fhir-kit-client';
import { createProject, drivers, ooText, startServer, type TestProject, type TestServer } from './harness.js';

/** batch and transaction Bundles at POST [base] (docs/rest.md#batch-and-transaction). */
for (const driver of drivers) {
  describe(`batch and transaction (${driver})`, () => {
    let server: TestServer;
    let project: TestProject;
    before(async () => {
      server = await startServer(driver, { env: { LATTICE_BUNDLE_MAX_ENTRIES: '20' } });
      project = await createProject(server, 'Bundles');
    });
    after(() => server.stop());

    const post = (body: unknown) => server.fhir('POST', '', { token: project.adminToken, body });
    const tx = (entry: unknown[]) => post({ resourceType: 'Bundle', type: 'transaction', entry });
    const urn = () => `urn:uuid:${randomUUID()}`;
    const mrn = () => randomBytes(6).toString('hex');
    const get = (path: string) => server.fhir('GET', path, { token: project.adminToken });

    test('transaction: creates with urn:uuid references resolved, PUT with an id, GET; responses in entry order', async () => {
      const p = urn();
      const o = urn();
      const id = `tx-${mrn()}`;
      const res = await tx([
        { request: { method: 'GET', url: 'Patient?_count=1' } },
        { fullUrl: o, resource: { resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: { reference: p } }, request: { method: 'POST', url: 'Observation' } },
        { fullUrl: p, resource: { resourceType: 'Patient', name: [{ family: 'Tx' }] }, request: { method: 'POST', url: 'Patient' } },
        { resource: { resourceType: 'Patient', id, generalPractitioner: [{ reference: p }] }, request: { method: 'PUT', url: `Patient/${id}` } },
      ]);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.type, 'transaction-response');
      const [search, obs, pat, put] = res.body.entry;
      assert.equal(search.response.status, '200 OK');
      assert.equal(search.resource.type, 'searchset');
      assert.equal(obs.response.status, '201 Created');
      assert.equal(pat.response.status, '201 Created');
      assert.equal(put.response.status, '201 Created');
      assert.equal(pat.response.etag, 'W/"1"');
      assert.match(pat.response.location, new RegExp(`/Patient/${pat.resource.id}/_history/1$`));
      assert.equal(obs.resource.subject.reference, `Patient/${pat.resource.id}`);
      assert.equal((await get(`/Patient/${id}`)).body.generalPractitioner[0].reference, `Patient/${pat.resource.id}`);
      assert.equal((await get(`/Observation?subject=Patient/${pat.resource.id}`)).body.total, 1);
    });

    test('transaction: circular references between created resources resolve; conditional references resolve', async () => {
      const a = urn();
      const b = urn();
      const value = mrn();
      await server.fhir('POST', '/Patient', { token: project.adminToken, body: { resourceType: 'Patient', identifier: [{ system: 'http://b', value }] } });
      const res = await tx([
        { fullUrl: a, resource: { resourceType: 'Patient', link: [{ type: 'seealso', other: { reference: b } }] }, request: { method: 'POST', url: 'Patient' } },
        { fullUrl: b, resource: { resourceType: 'Patient', link: [{ type: 'seealso', other: { reference: a } }] }, request: { method: 'POST', url: 'Patient' } },
        {
          resource: { resourceType: 'Observation', status: 'final', code: { text: 'c' }, subject: { reference: `Patient?identifier=http://b|${value}` } },
          request: { method: 'POST', url: 'Observation' },
        },
      ]);
      assert.equal(res.status, 200, res.text);
      const [ea, eb, eo] = res.body.entry;
      assert.equal(ea.resource.link[0].other.reference, `Patient/${eb.resource.id}`);
      assert.equal(eb.resource.link[0].other.reference, `Patient/${ea.resource.id}`);
      assert.match(eo.resource.subject.reference, /^Patient\/[\w-]+$/);
      const none = await tx([{ resource: { resourceType: 'Observation', status: 'final', code: { text: 'c' }, subject: { reference: 'Patient?identifier=http://b|nobody' } }, request: { method: 'POST', url: 'Observation' } }]);
      assert.equal(none.status, 400);
      assert.equal(ooText(none.body), "Bundle.entry[0]: conditional reference 'Patient?identifier=http://b|nobody' matches no resource");
    });

    test('transaction: ifNoneExist finds the existing resource (200) and references to its fullUrl point at it', async () => {
      const value = mrn();
      const existing = (await server.fhir('POST', '/Patient', { token: project.adminToken, body: { resourceType: 'Patient', identifier: [{ system: 'http://c', value }] } })).body;
      const p = urn();
      const res = await tx([
        { fullUrl: p, resource: { resourceType: 'Patient', identifier: [{ system: 'http://c', value }] }, request: { method: 'POST', url: 'Patient', ifNoneExist: `identifier=http://c|${value}` } },
        { resource: { resourceType: 'Observation', status: 'final', code: { text: 'd' }, subject: { reference: p } }, request: { method: 'POST', url: 'Observation' } },
      ]);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.entry[0].response.status, '200 OK');
      assert.equal(res.body.entry[0].resource.id, existing.id);
      assert.equal(res.body.entry[1].resource.subject.reference, `Patient/${existing.id}`);
      assert.equal((await get(`/Patient?identifier=http://c|${value}`)).body.total, 1);
    });

    test('transaction atomicity: a failing last entry leaves no trace (current rows, history, search index)', async () => {
      const value = mrn();
      const id = `atomic-${value}`;
      const historyBefore = (await get('/Patient/_history?_count=0')).body.total;
      const res = await tx([
        { resource: { resourceType: 'Patient', id, identifier: [{ system: 'http://atomic', value }] }, request: { method: 'PUT', url: `Patient/${id}` } },
        { resource: { resourceType: 'Patient', identifier: [{ system: 'http://atomic', value }] }, request: { method: 'POST', url: 'Patient' } },
        // GET runs last (FHIR order): both writes have happened when it fails
        { request: { method: 'GET', url: 'Patient?bogus=1' } },
      ]);
      assert.equal(res.status, 400, res.text);
      assert.equal(ooText(res.body), 'Bundle.entry[2]: Unknown search parameter: bogus');
      assert.equal((await get(`/Patient/${id}`)).status, 404);
      assert.equal((await get(`/Patient/${id}/_history`)).status, 404);
      assert.equal((await get(`/Patient?identifier=http://atomic|${value}`)).body.total, 0);
      assert.equal((await get('/Patient/_history?_count=0')).body.total, historyBefore);
    });

    test('transaction errors name the entry: ifMatch, unknown urn:uuid, circular ifNoneExist, malformed entries', async () => {
      const created = (await server.fhir('POST', '/Patient', { token: project.adminToken, body: { resourceType: 'Patient' } })).body;
      const stale = await tx([{ resource: { ...created, gender: 'male' }, request: { method: 'PUT', url: `Patient/${created.id}`, ifMatch: 'W/"9"' } }]);
      assert.equal(stale.status, 412);
      assert.equal(ooText(stale.body), 'Bundle.entry[0]: Version mismatch');
      const ghost = urn();
      const unknown = await tx([
        { resource: { resourceType: 'Patient' }, request: { method: 'POST', url: 'Patient' } },
        { resource: { resourceType: 'Observation', status: 'final', code: { text: 'e' }, subject: { reference: ghost } }, request: { method: 'POST', url: 'Observation' } },
      ]);
      assert.equal(unknown.status, 400);
      assert.equal(ooText(unknown.body), `Bundle.entry[1]: unknown reference '${ghost}': no entry has this fullUrl`);
      const a = urn();
      const b = urn();
      const circular = await tx([
        { fullUrl: a, resource: { resourceType: 'Patient' }, request: { method: 'POST', url: 'Patient', ifNoneExist: `link=${b}` } },
        { fullUrl: b, resource: { resourceType: 'Patient' }, request: { method: 'POST', url: 'Patient', ifNoneExist: `link=${a}` } },
      ]);
      assert.equal(circular.status, 400);
      assert.equal(ooText(circular.body), 'circular reference between the ifNoneExist criteria of Bundle.entry[0], Bundle.entry[1]');
      const noRequest = await tx([{ resource: { resourceType: 'Patient' } }]);
      assert.equal(noRequest.status, 400);
      assert.equal(ooText(noRequest.body), 'Bundle.entry[0]: entry has no request');
      const badMethod = await tx([{ request: { method: 'TRACE', url: 'Patient' } }]);
      assert.equal(ooText(badMethod.body), "Bundle.entry[0]: entry request method 'TRACE' is not supported");
    });

    test('malformed Bundles and the entry limit', async () => {
      const notBundle = await post({ resourceType: 'Patient' });
      assert.equal(notBundle.status, 400);
      assert.equal(ooText(notBundle.body), 'Expected a Bundle of type batch or transaction');
      const collection = await post({ resourceType: 'Bundle', type: 'collection' });
      assert.equal(collection.status, 400);
      assert.equal(ooText(collection.body), "Bundle type 'collection' is not supported: expected batch or transaction");
      const tooMany = await tx(Array.from({ length: 21 }, () => ({ request: { method: 'GET', url: 'Patient' } })));
      assert.equal(tooMany.status, 413);
      assert.equal(tooMany.body.issue[0].code, 'too-costly');
      assert.equal(ooText(tooMany.body), 'Bundle has 21 entries; at most 20 are allowed');
      const put405 = await server.fhir('PUT', '', { token: project.adminToken, body: { resourceType: 'Bundle', type: 'batch' } });
      assert.equal(put405.status, 405);
      assert.equal(ooText(put405.body), 'Method PUT not allowed (allowed: GET, HEAD, POST)');
    });

    test('batch: entries run independently, each failure is its own OperationOutcome', async () => {
      const res = await post({
        resourceType: 'Bundle',
        type: 'batch',
        entry: [
          { resource: { resourceType: 'Patient', name: [{ family: 'Batch' }] }, request: { method: 'POST', url: 'Patient' } },
          { request: { method: 'GET', url: 'Patient/does-not-exist' } },
          { resource: { resourceType: 'Patient', birthDate: 'bad' }, request: { method: 'POST', url: 'Patient' } },
          { request: { method: 'GET', url: 'metadata' } },
        ],
      });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.type, 'batch-response');
      const [created, missing, invalid, metadata] = res.body.entry;
      assert.equal(created.response.status, '201 Created');
      assert.equal((await get(`/Patient/${created.resource.id}`)).status, 200);
      assert.equal(missing.response.status, '404 Not Found');
      assert.equal(ooText(missing.response.outcome), 'Not found');
      assert.equal(invalid.response.status, '400 Bad Request');
      assert.equal(invalid.response.outcome.issue[0].expression[0], 'Patient.birthDate');
      assert.equal(metadata.resource.resourceType, 'CapabilityStatement');
    });

    test('batch: a conditional reference is resolved to its single match; none or several → that entry\'s 400', async () => {
      // Before, a batch stored `Patient?identifier=…` as literal text (201). A plain member may do all of it.
      const token = server.memberToken;
      const id = mrn();
      const system = 'http://example.org/batch-mrn';
      const patient = await server.fhir('POST', '/Patient', { token, body: { resourceType: 'Patient', identifier: [{ system, value: id }] } });
      assert.equal(patient.status, 201, patient.text);
      const twin = mrn();
      for (let i = 0; i < 2; i++) await server.fhir('POST', '/Patient', { token, body: { resourceType: 'Patient', identifier: [{ system, value: twin }] } });
      const observation = (reference: string) => ({
        resource: { resourceType: 'Observation', status: 'final', code: { text: 'weight' }, subject: { reference } },
        request: { method: 'POST', url: 'Observation' },
      });
      const res = await server.fhir('POST', '', {
        token,
        body: {
          resourceType: 'Bundle',
          type: 'batch',
          entry: [
            observation(`Patient?identifier=${system}|${id}`),
            observation(`Patient?identifier=${system}|nobody-${id}`),
            observation(`Patient?identifier=${system}|${twin}`),
          ],
        },
      });
      assert.equal(res.status, 200, res.text);
      const [resolved, none, several] = res.body.entry;
      assert.equal(resolved.response.status, '201 Created', JSON.stringify(resolved));
      assert.equal(resolved.resource.subject.reference, `Patient/${patient.body.id}`);
      const stored = await server.fhir('GET', `/Observation/${resolved.resource.id}`, { token });
      assert.equal(stored.body.subject.reference, `Patient/${patient.body.id}`);
      assert.equal(none.response.status, '400 Bad Request');
      assert.equal(ooText(none.response.outcome), `conditional reference 'Patient?identifier=${system}|nobody-${id}' matches no resource`);
      assert.equal(several.response.status, '412 Precondition Failed');
      assert.equal(ooText(several.response.outcome), `conditional reference 'Patient?identifier=${system}|${twin}' matches several resources`);
    });

    test('a Bundle resolves repeated conditional references once, and again after an entry writes their type', async () => {
      // Each criteria is searched once per Bundle (docs/rest.md#conditional-references); an entry
      // that writes an Organization makes the next `Organization?…` search again: a second
      // Organization with the same identifier makes it match several (412), in a transaction as
      // in a batch — a cached answer would have resolved it to the first.
      const token = server.memberToken;
      const value = mrn();
      const system = 'http://example.org/org-id';
      const org = await server.fhir('POST', '/Organization', { token, body: { resourceType: 'Organization', identifier: [{ system, value }] } });
      assert.equal(org.status, 201, org.text);
      const ref = `Organization?identifier=${system}|${value}`;
      const patient = { resource: { resourceType: 'Patient', managingOrganization: { reference: ref } }, request: { method: 'POST', url: 'Patient' } };
      const twin = { resource: { resourceType: 'Organization', identifier: [{ system, value }] }, request: { method: 'POST', url: 'Organization' } };
      for (const type of ['transaction', 'batch']) {
        const repeated = await server.fhir('POST', '', { token, body: { resourceType: 'Bundle', type, entry: [patient, patient, patient] } });
        assert.equal(repeated.status, 200, repeated.text);
        for (const e of repeated.body.entry) assert.equal(e.resource.managingOrganization.reference, `Organization/${org.body.id}`, type);
      }
      const tx = await server.fhir('POST', '', { token, body: { resourceType: 'Bundle', type: 'transaction', entry: [patient, twin, patient] } });
      assert.equal(tx.status, 412, tx.text);
      assert.equal(ooText(tx.body), `Bundle.entry[2]: conditional reference '${ref}' matches several resources`);
      const batch = await server.fhir('POST', '', { token, body: { resourceType: 'Bundle', type: 'batch', entry: [patient, twin, patient] } });
      assert.equal(batch.status, 200, batch.text);
      assert.deepEqual(batch.body.entry.map((e: { response: { status: string } }) => e.response.status), ['201 Created', '201 Created', '412 Precondition Failed']);
    });

    test('MedplumClient.executeBatch and fhir-kit-client transaction/batch', async () => {
      const medplum = new MedplumClient({ baseUrl: `${server.baseUrl}/`, fetch, storage: undefined });
      medplum.setAccessToken(project.adminToken);
      const p = urn();
      const bundle: Bundle = {
        resourceType: 'Bundle',
        type: 'transaction',
        entry: [
          { fullUrl: p, resource: { resourceType: 'Patient', name: [{ family: 'Medplum' }] }, request: { method: 'POST', url: 'Patient' } },
          { resource: { resourceType: 'Observation', status: 'final', code: { text: 'm' }, subject: { reference: p } }, request: { method: 'POST', url: 'Observation' } },
        ],
      };
      const result = await medplum.executeBatch(bundle);
      assert.equal(result.type, 'transaction-response');
      assert.equal(result.entry?.[0]?.response?.status, '201 Created');
      const kit = new Client({ baseUrl: server.fhirUrl, bearerToken: project.adminToken });
      type KitBody = Parameters<Client['transaction']>[0]['body'];
      const kitTx = (await kit.transaction({ body: bundle as unknown as KitBody })) as unknown as Bundle;
      assert.equal(kitTx.type, 'transaction-response');
      const batchBody: Bundle = { resourceType: 'Bundle', type: 'batch', entry: [{ request: { method: 'GET', url: 'Patient?_count=1' } }] };
      const kitBatch = (await kit.batch({ body: batchBody as unknown as KitBody })) as unknown as Bundle;
      assert.equal(kitBatch.type, 'batch-response');
      assert.equal(kitBatch.entry?.[0]?.response?.status, '200 OK');
    });
  });
}
