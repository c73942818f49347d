import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before, describe, test } from 'node:test';
import { drivers, startServer, type TestServer } from './harness.js';

/** fhir.js's answer: the parsed body, the status and a header getter. */
interface FhirJsResponse {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON bodies off the wire are untyped by nature
  data: Record<string, any>;
  status: number;
  headers: (name: string) => string | undefined;
}
type Call = (args: Record<string, unknown>) => Promise<FhirJsResponse>;
type FhirJs = Record<'conformance' | 'create' | 'read' | 'vread' | 'update' | 'delete' | 'search' | 'nextPage' | 'transaction' | 'history' | 'typeHistory' | 'resourceHistory' | 'conditionalUpdate' | 'conditionalDelete' | 'patch' | 'resolve', Call>;

// fhir.js (npm `fhir.js`, its node adapter over `request`): a real, independent client.
const mkFhir = createRequire(import.meta.url)('fhir.js') as (config: Record<string, unknown>) => FhirJs;

for (const driver of drivers) {
  describe(`fhir.js (${driver})`, () => {
    let server: TestServer;
    let client: FhirJs;
    before(async () => {
      server = await startServer(driver);
      client = mkFhir({ baseUrl: server.fhirUrl, auth: { bearer: server.adminToken } });
    });
    after(() => server.stop());

    /** fhir.js rejects with the response for a status ≥ 400: the status and the body, to fail clearly. */
    const ok = async (call: Promise<FhirJsResponse>): Promise<FhirJsResponse> =>
      call.catch((res: FhirJsResponse) => assert.fail(`fhir.js call failed: ${res.status} ${JSON.stringify(res.data)}`));

    test('conformance, create, read, vread, update, history and delete', async () => {
      const meta = await ok(client.conformance({}));
      assert.equal(meta.data.resourceType, 'CapabilityStatement');
      assert.equal(meta.data.fhirVersion, '4.0.1');

      const created = await ok(client.create({ resource: { resourceType: 'Patient', name: [{ family: 'FhirJs', given: ['Ann'] }] } }));
      assert.equal(created.status, 201);
      const id = created.data.id as string;
      assert.match(created.headers('location') ?? '', new RegExp(`/Patient/${id}/_history/1$`));

      const read = await ok(client.read({ type: 'Patient', id }));
      assert.equal(read.data.name[0].family, 'FhirJs');
      const updated = await ok(client.update({ resource: { ...read.data, gender: 'female' } }));
      assert.equal(updated.data.meta.versionId, '2');
      const first = await ok(client.vread({ type: 'Patient', id, versionId: '1' }));
      assert.equal(first.data.meta.versionId, '1');
      assert.equal(first.data.gender, undefined);

      const history = await ok(client.resourceHistory({ type: 'Patient', id }));
      assert.equal(history.data.type, 'history');
      assert.deepEqual(history.data.entry.map((e: { resource: { meta: { versionId: string } } }) => e.resource.meta.versionId), ['2', '1']);
      const typeHistory = await ok(client.typeHistory({ type: 'Patient' }));
      assert.ok(typeHistory.data.entry.some((e: { resource: { id: string } }) => e.resource.id === id));

      const deleted = await ok(client.delete({ type: 'Patient', id }));
      assert.equal(deleted.status, 200);
      const gone = await client.read({ type: 'Patient', id }).then(
        () => assert.fail('read of a deleted Patient succeeded'),
        (res: FhirJsResponse) => res,
      );
      assert.equal(gone.status, 410);
      assert.equal(gone.data.resourceType, 'OperationOutcome');
    });

    test('searches with its query language (modifiers, prefixes, sort, count) and follows next links', async () => {
      const family = `FhirJsSearch${Date.now()}`;
      const ids: string[] = [];
      for (const [given, birthDate] of [['A', '1970-01-01'], ['B', '1980-01-01'], ['C', '1990-01-01'], ['D', '2000-01-01']]) {
        ids.push((await ok(client.create({ resource: { resourceType: 'Patient', name: [{ family, given: [given] }], birthDate } }))).data.id);
      }
      // family:exact, birthdate=gt1975-01-01, _sort:desc=birthdate (fhir.js writes DSTU2's sort), _count=2
      const page = await ok(client.search({ type: 'Patient', query: { family: { $exact: family }, birthdate: { $gt: '1975-01-01' }, $sort: [['birthdate', 'desc']], _count: 2 } }));
      assert.equal(page.data.type, 'searchset');
      assert.equal(page.data.total, 3);
      const seen = page.data.entry.map((e: { resource: { name: Array<{ given: string[] }> } }) => e.resource.name[0].given[0]);
      const next = await ok(client.nextPage({ bundle: page.data }));
      seen.push(...next.data.entry.map((e: { resource: { name: Array<{ given: string[] }> } }) => e.resource.name[0].given[0]));
      assert.deepEqual(seen, ['D', 'C', 'B']);

      // An OR of values, and ascending order.
      const either = await ok(client.search({ type: 'Patient', query: { family, birthdate: { $or: ['1970-01-01', '2000-01-01'] }, $sort: [['birthdate', 'asc']] } }));
      assert.deepEqual(either.data.entry.map((e: { resource: { id: string } }) => e.resource.id), [ids[0], ids[3]]);
    });

    test('transaction, conditional update and delete, JSON Patch, resolve', async () => {
      const marker = `fhirjs-${Date.now()}`;
      const bundle = {
        resourceType: 'Bundle',
        type: 'transaction',
        entry: [
          { fullUrl: 'urn:uuid:0b8c0d2e-3f56-4c1a-9a52-6f7d7c1f0a01', resource: { resourceType: 'Patient', identifier: [{ system: 'urn:fhirjs', value: marker }] }, request: { method: 'POST', url: 'Patient' } },
          {
            resource: { resourceType: 'Observation', status: 'final', code: { text: 'weight' }, subject: { reference: 'urn:uuid:0b8c0d2e-3f56-4c1a-9a52-6f7d7c1f0a01' } },
            request: { method: 'POST', url: 'Observation' },
          },
        ],
      };
      const tx = await ok(client.transaction({ bundle }));
      assert.equal(tx.data.type, 'transaction-response');
      assert.deepEqual(tx.data.entry.map((e: { response: { status: string } }) => e.response.status), ['201 Created', '201 Created']);
      const patientId = /Patient\/([^/]+)\/_history\/1$/.exec(tx.data.entry[0].response.location as string)?.[1] as string;
      assert.ok(patientId, tx.data.entry[0].response.location);

      const cond = await ok(client.conditionalUpdate({ resource: { resourceType: 'Patient', identifier: [{ system: 'urn:fhirjs', value: marker }], gender: 'male' }, query: { identifier: `urn:fhirjs|${marker}` } }));
      assert.equal(cond.data.id, patientId);
      assert.equal(cond.data.gender, 'male');

      const patched = await ok(client.patch({ type: 'Patient', id: patientId, data: [{ op: 'add', path: '/birthDate', value: '1999-09-09' }] }));
      assert.equal(patched.data.birthDate, '1999-09-09');

      const obs = await ok(client.search({ type: 'Observation', query: { subject: `Patient/${patientId}`, $include: { Observation: 'subject' } } }));
      assert.deepEqual(obs.data.entry.map((e: { search: { mode: string } }) => e.search.mode), ['match', 'include']);
      const has = await ok(client.search({ type: 'Patient', query: { identifier: `urn:fhirjs|${marker}`, $has: { 'Observation:subject:status': 'final' } } }));
      assert.deepEqual(has.data.entry.map((e: { resource: { id: string } }) => e.resource.id), [patientId]);
      const subject = await ok(client.resolve({ reference: obs.data.entry[0].resource.subject, resource: obs.data.entry[0].resource }));
      assert.equal(subject.data.id, patientId);

      await ok(client.conditionalDelete({ type: 'Observation', query: { subject: `Patient/${patientId}` } }));
      assert.equal((await ok(client.search({ type: 'Observation', query: { subject: `Patient/${patientId}` } }))).data.total, 0);
    });
  });
}
