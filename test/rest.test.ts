import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { CapabilityStatementRestResource, CapabilityStatementRestResourceSearchParam, OperationOutcomeIssue, Patient, Practitioner } from '@medplum/fhirtypes';
import { drivers, ooText, startServer, type TestServer } from './harness.js';

const patient = (family: string, extra: Record<string, unknown> = {}) => ({
  resourceType: 'Patient',
  name: [{ family, given: ['Ann'] }],
  ...extra,
});

for (const driver of drivers) {
  describe(`FHIR REST (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver);
    });
    after(() => server.stop());

    test('create answers 201 with Location, ETag, Last-Modified and server-assigned id/meta', async () => {
      const res = await server.fhir('POST', '/Patient', { body: { ...patient('Smith'), id: 'client-chosen' } });
      assert.equal(res.status, 201, res.text);
      assert.notEqual(res.body.id, 'client-chosen');
      assert.equal(res.body.meta.versionId, '1');
      assert.ok(res.body.meta.lastUpdated);
      assert.equal(res.headers.get('etag'), 'W/"1"');
      assert.equal(res.headers.get('location'), `${server.fhirUrl}/Patient/${res.body.id}/_history/1`);
      assert.ok(res.headers.get('last-modified'));
      assert.match(res.headers.get('content-type') ?? '', /^application\/fhir\+json; charset=utf-8/);
    });

    test('read, update, vread of the old version, history newest first', async () => {
      const created = (await server.fhir('POST', '/Patient', { body: patient('Jones') })).body;
      const read = await server.fhir('GET', `/Patient/${created.id}`);
      assert.equal(read.status, 200);
      assert.equal(read.headers.get('etag'), 'W/"1"');
      assert.ok(read.headers.get('last-modified'));

      const updated = await server.fhir('PUT', `/Patient/${created.id}`, { body: { ...created, gender: 'female' } });
      assert.equal(updated.status, 200, updated.text);
      assert.equal(updated.body.meta.versionId, '2');
      assert.equal(updated.headers.get('etag'), 'W/"2"');

      const v1 = await server.fhir('GET', `/Patient/${created.id}/_history/1`);
      assert.equal(v1.status, 200);
      assert.equal(v1.body.gender, undefined);
      assert.equal(v1.body.meta.versionId, '1');

      const history = await server.fhir('GET', `/Patient/${created.id}/_history`);
      assert.equal(history.status, 200);
      assert.equal(history.body.type, 'history');
      assert.deepEqual(
        history.body.entry.map((e: { resource: Patient }) => e.resource.meta?.versionId),
        ['2', '1'],
      );
    });

    test('type history lists versions of every resource of the type, newest first', async () => {
      const a = (await server.fhir('POST', '/Practitioner', { body: { resourceType: 'Practitioner', name: [{ family: 'A' }] } })).body;
      const b = (await server.fhir('POST', '/Practitioner', { body: { resourceType: 'Practitioner', name: [{ family: 'B' }] } })).body;
      const res = await server.fhir('GET', '/Practitioner/_history');
      assert.equal(res.status, 200);
      const ids = res.body.entry.map((e: { resource: Practitioner }) => e.resource.id);
      assert.ok(ids.indexOf(b.id) < ids.indexOf(a.id));
    });

    test('identical update creates no new version', async () => {
      const created = (await server.fhir('POST', '/Patient', { body: patient('Same') })).body;
      const again = await server.fhir('PUT', `/Patient/${created.id}`, { body: created });
      assert.equal(again.status, 200);
      assert.equal(again.body.meta.versionId, '1');
    });

    test('delete then read answers 410 Deleted; delete again is 200; unknown id is 404', async () => {
      const created = (await server.fhir('POST', '/Patient', { body: patient('Gone') })).body;
      const del = await server.fhir('DELETE', `/Patient/${created.id}`);
      assert.equal(del.status, 200);
      assert.equal(del.body.resourceType, 'OperationOutcome');
      const read = await server.fhir('GET', `/Patient/${created.id}`);
      assert.equal(read.status, 410);
      assert.equal(read.body.issue[0].code, 'deleted');
      assert.equal(ooText(read.body), 'Deleted');
      assert.equal((await server.fhir('DELETE', `/Patient/${created.id}`)).status, 200);
      const unknown = await server.fhir('DELETE', '/Patient/never-existed');
      assert.equal(unknown.status, 404);
      assert.equal(ooText(unknown.body), 'Not found');
    });

    test('a read after each change sees that change (read, update, read, delete, read)', async () => {
      const created = (await server.fhir('POST', '/Patient', { body: patient('Fresh') })).body;
      assert.equal((await server.fhir('GET', `/Patient/${created.id}`)).body.meta.versionId, '1');
      await server.fhir('PUT', `/Patient/${created.id}`, { body: { ...created, gender: 'unknown' } });
      const afterUpdate = await server.fhir('GET', `/Patient/${created.id}`);
      assert.equal(afterUpdate.body.meta.versionId, '2');
      assert.equal(afterUpdate.body.gender, 'unknown');
      await server.fhir('DELETE', `/Patient/${created.id}`);
      assert.equal((await server.fhir('GET', `/Patient/${created.id}`)).status, 410);
      const revived = await server.fhir('PUT', `/Patient/${created.id}`, { body: { ...created, gender: 'male' } });
      assert.equal(revived.status, 200, revived.text);
      const afterRevive = await server.fhir('GET', `/Patient/${created.id}`);
      assert.equal(afterRevive.body.gender, 'male');
      assert.equal(afterRevive.body.meta.versionId, '4');
    });

    test('read of an unknown id answers 404 Not found', async () => {
      const res = await server.fhir('GET', '/Patient/does-not-exist');
      assert.equal(res.status, 404);
      assert.equal(res.body.issue[0].code, 'not-found');
      assert.equal(ooText(res.body), 'Not found');
    });

    test('PUT with a new client id creates the resource (201)', async () => {
      const res = await server.fhir('PUT', '/Patient/my-own-id-1', { body: { ...patient('Put'), id: 'my-own-id-1' } });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.body.id, 'my-own-id-1');
      assert.equal(res.headers.get('location'), `${server.fhirUrl}/Patient/my-own-id-1/_history/1`);
      assert.equal((await server.fhir('GET', '/Patient/my-own-id-1')).status, 200);
    });

    test('PUT with an id different from the URL answers 400', async () => {
      const res = await server.fhir('PUT', '/Patient/abc', { body: { ...patient('X'), id: 'xyz' } });
      assert.equal(res.status, 400);
      assert.equal(ooText(res.body), 'Resource ID does not match URL');
    });

    test('resourceType not matching the URL answers 400', async () => {
      const res = await server.fhir('POST', '/Patient', { body: { resourceType: 'Observation', status: 'final', code: { text: 'x' } } });
      assert.equal(res.status, 400);
      assert.equal(res.body.issue[0].code, 'invalid');
      assert.equal(ooText(res.body), "Resource type 'Observation' does not match URL type 'Patient'");
    });

    test('If-Match with a stale version answers 412 Version mismatch', async () => {
      const created = (await server.fhir('POST', '/Patient', { body: patient('Match') })).body;
      await server.fhir('PUT', `/Patient/${created.id}`, { body: { ...created, gender: 'male' } });
      const stale = await server.fhir('PUT', `/Patient/${created.id}`, {
        body: { ...created, gender: 'other' },
        headers: { 'if-match': 'W/"1"' },
      });
      assert.equal(stale.status, 412);
      assert.equal(stale.body.issue[0].code, 'conflict');
      assert.equal(ooText(stale.body), 'Version mismatch');
      const current = await server.fhir('PUT', `/Patient/${created.id}`, {
        body: { ...created, gender: 'other' },
        headers: { 'if-match': 'W/"2"' },
      });
      assert.equal(current.status, 200);
      assert.equal(current.body.meta.versionId, '3');
    });

    test('10 concurrent updates with the same If-Match: exactly one succeeds, no lost update', async () => {
      const created = (await server.fhir('POST', '/Patient', { body: patient('Race') })).body;
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          server.fhir('PUT', `/Patient/${created.id}`, {
            body: { ...created, name: [{ family: `Race${i}` }] },
            headers: { 'if-match': 'W/"1"' },
          }),
        ),
      );
      const statuses = results.map((r) => r.status).sort();
      assert.deepEqual(statuses, [200, 412, 412, 412, 412, 412, 412, 412, 412, 412]);
      const winner = results.find((r) => r.status === 200)!;
      const read = await server.fhir('GET', `/Patient/${created.id}`);
      assert.equal(read.body.meta.versionId, '2');
      assert.equal(read.body.name[0].family, winner.body.name[0].family);
      const history = await server.fhir('GET', `/Patient/${created.id}/_history`);
      assert.equal(history.body.total, 2);
    });

    test('concurrent create-on-PUT of one id creates it once', async () => {
      const results = await Promise.all(
        Array.from({ length: 8 }, () => server.fhir('PUT', '/Patient/race-put', { body: { ...patient('P'), id: 'race-put' } })),
      );
      assert.equal(results.filter((r) => r.status === 201).length, 1);
      assert.ok(results.every((r) => r.status === 201 || r.status === 200));
      const history = await server.fhir('GET', '/Patient/race-put/_history');
      assert.equal(history.body.total, 1);
    });

    test('Prefer: return=minimal answers without a body', async () => {
      const res = await server.fhir('POST', '/Patient', { body: patient('Min'), headers: { prefer: 'return=minimal' } });
      assert.equal(res.status, 201);
      assert.equal(res.text, '');
      assert.ok(res.headers.get('location'));
    });

    test('malformed JSON answers 400 Content could not be parsed', async () => {
      const res = await server.fhir('POST', '/Patient', { raw: '{"resourceType": "Patient",', contentType: 'application/fhir+json' });
      assert.equal(res.status, 400);
      assert.equal(res.body.issue[0].code, 'invalid');
      assert.equal(ooText(res.body), 'Content could not be parsed');
    });

    test('a non-JSON content type answers 415', async () => {
      const res = await server.fhir('POST', '/Patient', { raw: '<Patient/>', contentType: 'application/fhir+xml' });
      assert.equal(res.status, 415);
      assert.equal(res.body.issue[0].code, 'not-supported');
      assert.equal(ooText(res.body), 'Unsupported content type: application/fhir+xml');
    });

    test('application/json and application/json+fhir with charset are accepted', async () => {
      for (const contentType of ['application/json', 'application/json+fhir; charset=utf-8', 'application/fhir+json;charset=UTF-8']) {
        const res = await server.fhir('POST', '/Patient', { raw: JSON.stringify(patient('Ct')), contentType });
        assert.equal(res.status, 201, `${contentType}: ${res.text}`);
      }
    });

    test('a body over the limit answers 413 Request body too large', async () => {
      const big = JSON.stringify({ ...patient('Big'), text: { status: 'generated', div: `<div>${'x'.repeat(server.config.bodyLimit)}</div>` } });
      const res = await server.fhir('POST', '/Patient', { raw: big });
      assert.equal(res.status, 413);
      assert.equal(res.body.issue[0].code, 'too-costly');
      assert.equal(ooText(res.body), 'Request body too large');
    });

    test('an unknown resource type answers 404', async () => {
      const res = await server.fhir('GET', '/Spaceship/1');
      assert.equal(res.status, 404);
      assert.equal(ooText(res.body), 'Not found');
      assert.equal(res.body.issue[0].diagnostics, 'Unknown resource type: Spaceship');
    });

    test('an unknown route answers 404 Not found', async () => {
      const res = await server.request('GET', '/nothing/here');
      assert.equal(res.status, 404);
      assert.equal(ooText(res.body), 'Not found');
    });

    test('an invalid resource answers 400 with one issue per problem and expressions', async () => {
      const res = await server.fhir('POST', '/Patient', {
        body: { resourceType: 'Patient', birthDate: 'not-a-date', gender: 5, colour: 'blue' },
      });
      assert.equal(res.status, 400);
      const expressions = res.body.issue.map((i: OperationOutcomeIssue) => i.expression?.[0]).sort();
      assert.deepEqual(expressions, ['Patient.birthDate', 'Patient.colour', 'Patient.gender']);
    });

    test('a missing required element is reported with its expression', async () => {
      const res = await server.fhir('POST', '/Observation', { body: { resourceType: 'Observation', code: { text: 'x' } } });
      assert.equal(res.status, 400);
      assert.ok(res.body.issue.some((i: OperationOutcomeIssue) => i.expression?.[0] === 'Observation.status'), res.text);
    });

    test('every response carries X-Request-Id, echoed when given', async () => {
      const res = await server.fhir('GET', '/metadata', { headers: { 'x-request-id': 'abc-123' } });
      assert.equal(res.headers.get('x-request-id'), 'abc-123');
      const other = await server.fhir('GET', '/metadata');
      assert.ok(other.headers.get('x-request-id'));
    });

    test('_pretty=true pretty-prints and _format=json is accepted', async () => {
      const res = await server.fhir('GET', '/metadata?_format=json&_pretty=true');
      assert.equal(res.status, 200);
      assert.match(res.text, /\n {2}"resourceType"/);
    });

    test('metadata is a CapabilityStatement listing resource types and search parameters', async () => {
      const res = await server.fhir('GET', '/metadata', { token: null });
      assert.equal(res.status, 200);
      assert.equal(res.body.resourceType, 'CapabilityStatement');
      assert.equal(res.body.fhirVersion, '4.0.1');
      const patientEntry = res.body.rest[0].resource.find((r: CapabilityStatementRestResource) => r.type === 'Patient');
      assert.ok(patientEntry.searchParam.some((p: CapabilityStatementRestResourceSearchParam) => p.name === 'birthdate'));
      assert.ok(res.body.rest[0].resource.length > 140);
    });

    test('GET /healthz answers ok', async () => {
      const res = await server.request('GET', '/healthz', { token: null });
      assert.equal(res.status, 200);
      assert.equal(res.body.status, 'ok');
    });
  });
}
