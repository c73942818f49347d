import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createProject, drivers, ooText, startServer, type ApiResponse, type TestProject, type TestServer } from './harness.js';
import { syntheticRecord } from './support/synthetic-record.js';

/**
 * Writes as clients expect them (docs/rest.md#delete, docs/rest.md#batch-and-transaction):
 * `If-Match` on DELETE, a delete answering alike inside and outside a transaction, and a Synthea-size patient record as one transaction with the default limits.
 */

function assertOutcome(res: ApiResponse, status: number, text: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.resourceType, 'OperationOutcome', res.text);
  assert.equal(ooText(res.body), text, res.text);
}

for (const driver of drivers) {
  describe(`REST writes (${driver})`, () => {
    let server: TestServer;
    let other: TestProject;
    before(async () => {
      server = await startServer(driver);
      other = await createProject(server, 'Other writes');
    });
    after(() => server.stop());

    const newPatient = async (family: string) => (await server.fhir('POST', '/Patient', { body: { resourceType: 'Patient', name: [{ family }] } })).body;

    test('DELETE with If-Match: stale or already deleted → 412 Version mismatch (nothing deleted); current or * → deleted', async () => {
      const p = await newPatient('IfMatch');
      await server.fhir('PUT', `/Patient/${p.id}`, { body: { ...p, gender: 'female' } }); // now version 2
      const stale = await server.fhir('DELETE', `/Patient/${p.id}`, { headers: { 'if-match': 'W/"1"' } });
      assertOutcome(stale, 412, 'Version mismatch');
      assert.equal(stale.body.issue[0].code, 'conflict');
      assert.equal((await server.fhir('GET', `/Patient/${p.id}`)).status, 200);
      assertOutcome(await server.fhir('DELETE', `/Patient/${p.id}`, { headers: { 'if-match': 'W/"2"' } }), 200, 'Deleted');
      assert.equal((await server.fhir('GET', `/Patient/${p.id}`)).status, 410);
      // Deleted: no current version to match. Never existed: 404 before any version check.
      assertOutcome(await server.fhir('DELETE', `/Patient/${p.id}`, { headers: { 'if-match': '*' } }), 412, 'Version mismatch');
      assertOutcome(await server.fhir('DELETE', '/Patient/never-was', { headers: { 'if-match': 'W/"1"' } }), 404, 'Not found');
      const q = await newPatient('Star');
      assertOutcome(await server.fhir('DELETE', `/Patient/${q.id}`, { headers: { 'if-match': '*' } }), 200, 'Deleted');
      const r = await newPatient('Garbage');
      assertOutcome(await server.fhir('DELETE', `/Patient/${r.id}`, { headers: { 'if-match': 'W/"x' } }), 412, 'Version mismatch');
      assert.equal((await server.fhir('GET', `/Patient/${r.id}`)).status, 200);
    });

    test('conditional DELETE with If-Match applies it to the match', async () => {
      const p = (await server.fhir('POST', '/Patient', { body: { resourceType: 'Patient', identifier: [{ system: 'http://w', value: 'cond-ifmatch' }] } })).body;
      const url = '/Patient?identifier=http://w|cond-ifmatch';
      assertOutcome(await server.fhir('DELETE', url, { headers: { 'if-match': 'W/"7"' } }), 412, 'Version mismatch');
      assert.equal((await server.fhir('GET', `/Patient/${p.id}`)).status, 200);
      assertOutcome(await server.fhir('DELETE', url, { headers: { 'if-match': 'W/"1"' } }), 200, 'Deleted');
      assert.equal((await server.fhir('GET', `/Patient/${p.id}`)).status, 410);
    });

    test('a delete answers alike alone and in a transaction: deleted again 200 Deleted; an unknown id 404, failing the transaction (nothing kept)', async () => {
      const gone = await newPatient('DeletedTwice');
      assertOutcome(await server.fhir('DELETE', `/Patient/${gone.id}`), 200, 'Deleted');
      assertOutcome(await server.fhir('DELETE', `/Patient/${gone.id}`), 200, 'Deleted');
      const again = await server.fhir('POST', '', { body: { resourceType: 'Bundle', type: 'transaction', entry: [{ request: { method: 'DELETE', url: `Patient/${gone.id}` } }] } });
      assert.equal(again.status, 200, again.text);
      assert.equal(again.body.entry[0].response.status, '200 OK');
      assert.equal(ooText(again.body.entry[0].response.outcome), 'Deleted');

      assertOutcome(await server.fhir('DELETE', '/Patient/absent-1'), 404, 'Not found');
      const res = await server.fhir('POST', '', {
        body: {
          resourceType: 'Bundle',
          type: 'transaction',
          entry: [
            { resource: { resourceType: 'Patient', name: [{ family: 'BeforeAbsentDelete' }] }, request: { method: 'POST', url: 'Patient' } },
            { request: { method: 'DELETE', url: 'Patient/absent-1' } },
          ],
        },
      });
      assertOutcome(res, 404, 'Bundle.entry[1]: Not found');
      assert.equal((await server.fhir('GET', '/Patient?family=BeforeAbsentDelete')).body.total, 0);
    });

    test('another project’s resource: delete is 404 as for an unknown id, alone, with If-Match and in a transaction; it stays', async () => {
      const theirs = await server.fhir('POST', '/Patient', { token: other.adminToken, body: { resourceType: 'Patient', name: [{ family: 'Theirs' }] } });
      assert.equal(theirs.status, 201, theirs.text);
      const id = theirs.body.id as string;
      assertOutcome(await server.fhir('DELETE', `/Patient/${id}`), 404, 'Not found');
      assertOutcome(await server.fhir('DELETE', `/Patient/${id}`, { headers: { 'if-match': 'W/"1"' } }), 404, 'Not found');
      const tx = await server.fhir('POST', '', { body: { resourceType: 'Bundle', type: 'transaction', entry: [{ request: { method: 'DELETE', url: `Patient/${id}` } }] } });
      assertOutcome(tx, 404, 'Bundle.entry[0]: Not found');
      assert.equal((await server.fhir('GET', `/Patient/${id}`, { token: other.adminToken })).status, 200);
    });

    test('a transaction DELETE entry with a stale ifMatch fails the Bundle with 412, nothing kept', async () => {
      const p = await newPatient('TxIfMatch');
      const res = await server.fhir('POST', '', {
        body: {
          resourceType: 'Bundle',
          type: 'transaction',
          entry: [
            { resource: { resourceType: 'Patient', name: [{ family: 'NotKept' }] }, request: { method: 'POST', url: 'Patient' } },
            { request: { method: 'DELETE', url: `Patient/${p.id}`, ifMatch: 'W/"3"' } },
          ],
        },
      });
      assertOutcome(res, 412, 'Bundle.entry[1]: Version mismatch');
      assert.equal((await server.fhir('GET', `/Patient/${p.id}`)).status, 200);
      assert.equal((await server.fhir('GET', '/Patient?family=NotKept')).body.total, 0);
    });

    test('a Synthea-shaped patient record of 3,014 entries goes in as one transaction with the default limits', async () => {
      const { bundle, entries } = syntheticRecord(215, { tag: `synthea-${driver}` });
      assert.equal(entries, 3014);
      const res = await server.fhir('POST', '', { body: bundle, headers: { prefer: 'return=minimal' } });
      assert.equal(res.status, 200, res.text.slice(0, 500));
      assert.equal(res.body.entry.length, entries);
      assert.ok(res.body.entry.every((e: { response: { status: string } }) => e.response.status === '201 Created'));
      const patient = (await server.fhir('GET', `/Patient?identifier=https://example.org/mrn|mrn-synthea-${driver}`)).body.entry[0].resource;
      const everything = await server.fhir('GET', `/Patient/${patient.id}/Observation?_summary=count`);
      assert.equal(everything.body.total, 215 * 8);
      // The same record again: the organization and practitioner match their ifNoneExist (200), the rest is new.
      const again = syntheticRecord(2, { tag: `synthea-${driver}` });
      const second = await server.fhir('POST', '', { body: again.bundle });
      assert.equal(second.status, 200, second.text.slice(0, 500));
      assert.equal(second.body.entry[0].response.status, '200 OK');
      assert.equal(second.body.entry[1].response.status, '200 OK');
    });
  });
}

for (const driver of drivers) {
  describe(`read and vread shaping (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver);
    });
    after(() => server.stop());

    test('_elements and _summary shape read and vread; bad values → 400', async () => {
      const created = await server.fhir('POST', '/Patient', {
        body: { resourceType: 'Patient', text: { status: 'generated', div: '<div xmlns="http://www.w3.org/1999/xhtml">Shaped</div>' }, name: [{ family: 'Shaped' }], gender: 'female', birthDate: '1970-01-01', photo: [{ contentType: 'image/png', data: 'AAAA' }] },
      });
      const id = created.body.id as string;
      const subsetted = { system: 'http://terminology.hl7.org/CodeSystem/v3-ObservationValue', code: 'SUBSETTED' };
      const elements = await server.fhir('GET', `/Patient/${id}?_elements=gender`);
      assert.equal(elements.status, 200, elements.text);
      assert.deepEqual(Object.keys(elements.body).sort(), ['gender', 'id', 'meta', 'resourceType']);
      assert.deepEqual(elements.body.meta.tag, [subsetted]);
      assert.equal(elements.headers.get('etag'), 'W/"1"');
      const summary = await server.fhir('GET', `/Patient/${id}/_history/1?_summary=true`);
      assert.equal(summary.status, 200, summary.text);
      assert.equal(summary.body.photo, undefined);
      assert.equal(summary.body.text, undefined);
      assert.equal(summary.body.birthDate, '1970-01-01');
      const text = await server.fhir('GET', `/Patient/${id}?_summary=text`);
      assert.deepEqual(Object.keys(text.body).sort(), ['id', 'meta', 'resourceType', 'text']);
      const data = await server.fhir('GET', `/Patient/${id}?_summary=data`);
      assert.equal(data.body.text, undefined);
      assert.equal(data.body.photo.length, 1);
      const whole = await server.fhir('GET', `/Patient/${id}?_summary=false`);
      assert.equal(whole.body.meta.tag, undefined);
      for (const [query, text] of [['_summary=count', "Invalid value 'count' for _summary"], ['_elements=a.b', "Invalid value 'a.b' for _elements"]]) {
        const res = await server.fhir('GET', `/Patient/${id}?${query}`);
        assert.equal(res.status, 400, res.text);
        assert.equal(ooText(res.body), text);
      }
    });
  });
}
