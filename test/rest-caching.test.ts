import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { drivers, ooText, startServer, type TestServer } from './harness.js';

/**
 * HTTP as caching clients use it (docs/rest.md#conditional-read), system search
 * (docs/rest.md#system-search) and history without the shared base content (docs/rest.md#history).
 */
for (const driver of drivers) {
  describe(`conditional read, system search, project history (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver);
    });
    after(() => server.stop());

    test('a repeat read with If-None-Match or If-Modified-Since → 304 without a body; a changed resource → 200', async () => {
      const created = (await server.fhir('POST', '/Patient', { body: { resourceType: 'Patient', name: [{ family: 'Cached' }] } })).body;
      const first = await server.fhir('GET', `/Patient/${created.id}`);
      assert.equal(first.status, 200);
      const etag = first.headers.get('etag') as string;
      const lastModified = first.headers.get('last-modified') as string;
      assert.equal(etag, 'W/"1"');
      assert.ok(lastModified);
      const again = await server.fhir('GET', `/Patient/${created.id}`, { headers: { 'if-none-match': etag } });
      assert.equal(again.status, 304);
      assert.equal(again.text, '');
      assert.equal(again.headers.get('etag'), etag);
      const strongList = await server.fhir('GET', `/Patient/${created.id}`, { headers: { 'if-none-match': 'W/"7", "1"' } });
      assert.equal(strongList.status, 304);
      const since = await server.fhir('GET', `/Patient/${created.id}`, { headers: { 'if-modified-since': lastModified } });
      assert.equal(since.status, 304);
      const older = await server.fhir('GET', `/Patient/${created.id}`, { headers: { 'if-modified-since': 'Mon, 01 Jan 2001 00:00:00 GMT' } });
      assert.equal(older.status, 200);
      assert.equal(older.body.id, created.id);
      // If-None-Match decides when both are sent.
      const both = await server.fhir('GET', `/Patient/${created.id}`, { headers: { 'if-none-match': 'W/"9"', 'if-modified-since': lastModified } });
      assert.equal(both.status, 200);
      await server.fhir('PUT', `/Patient/${created.id}`, { body: { ...created, name: [{ family: 'Changed' }] } });
      const changed = await server.fhir('GET', `/Patient/${created.id}`, { headers: { 'if-none-match': etag } });
      assert.equal(changed.status, 200);
      assert.equal(changed.headers.get('etag'), 'W/"2"');
      // vread: the version's own tag.
      const vread = await server.fhir('GET', `/Patient/${created.id}/_history/1`, { headers: { 'if-none-match': 'W/"1"' } });
      assert.equal(vread.status, 304);
      // Not found is still 404.
      assert.equal((await server.fhir('GET', '/Patient/no-such-patient', { headers: { 'if-none-match': '*' } })).status, 404);
      // In a batch: the entry's ifNoneMatch.
      const batch = await server.fhir('POST', '', {
        body: { resourceType: 'Bundle', type: 'batch', entry: [{ request: { method: 'GET', url: `Patient/${created.id}`, ifNoneMatch: 'W/"2"' } }] },
      });
      assert.equal(batch.status, 200, batch.text);
      assert.equal(batch.body.entry[0].response.status, '304 Not Modified');
      assert.equal(batch.body.entry[0].resource, undefined);
    });

    test('GET [base]?_type=A,B searches the types with their common parameters; others → 400 naming the type', async () => {
      const p = (await server.fhir('POST', '/Patient', { body: { resourceType: 'Patient', name: [{ family: 'Systemsearch' }] } })).body;
      const pr = (await server.fhir('POST', '/Practitioner', { body: { resourceType: 'Practitioner', name: [{ family: 'Systemsearch' }] } })).body;
      await server.fhir('POST', '/Organization', { body: { resourceType: 'Organization', name: 'Systemsearch' } });
      const res = await server.fhir('GET', '?_type=Patient,Practitioner&name=systemsearch&_sort=_lastUpdated');
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.type, 'searchset');
      assert.equal(res.body.total, 2);
      assert.deepEqual(res.body.entry.map((e: { fullUrl: string }) => e.fullUrl), [`${server.fhirUrl}/Patient/${p.id}`, `${server.fhirUrl}/Practitioner/${pr.id}`]);
      assert.ok(res.body.link[0].url.startsWith(`${server.fhirUrl}?_type=Patient%2CPractitioner`), res.body.link[0].url);
      const byId = await server.fhir('GET', `?_type=Patient&_type=Organization&_id=${p.id}`);
      assert.equal(byId.body.total, 1);
      const notCommon = await server.fhir('GET', '?_type=Patient,Observation&name=x');
      assert.equal(notCommon.status, 400);
      assert.equal(ooText(notCommon.body), 'Search parameter name cannot be used across the types of _type: for Observation: Unknown search parameter: name');
      const noType = await server.fhir('GET', '?name=x');
      assert.equal(noType.status, 400);
      assert.equal(ooText(noType.body), 'A system search needs _type: GET [base]?_type=<Type>,<Type>&… (a search of every resource type is not supported)');
      const badType = await server.fhir('GET', '?_type=Patient,Nope');
      assert.equal(ooText(badType.body), "Invalid value 'Nope' for _type: not a resource type");
    });

    test('type and system history leave out shared base content unless shared=true', async () => {
      // Validating a gender writes the base ValueSet administrative-gender into the shared content.
      const mine = (await server.fhir('POST', '/Patient', { body: { resourceType: 'Patient', gender: 'female' } })).body;
      const vs = await server.fhir('GET', '/ValueSet?url=http://hl7.org/fhir/ValueSet/administrative-gender');
      assert.equal(vs.body.total, 1);
      assert.equal(vs.body.entry[0].resource.meta.project, undefined);
      const types = (bundle: { entry?: Array<{ fullUrl: string; resource?: { meta?: { project?: string } } }> }) => bundle.entry ?? [];
      const own = await server.fhir('GET', '/_history?_count=1000');
      assert.equal(own.status, 200);
      assert.ok(types(own.body).some((e) => e.fullUrl.endsWith(`/Patient/${mine.id}`)));
      assert.ok(types(own.body).every((e) => e.resource?.meta?.project === server.projectId), 'only the project');
      assert.equal((await server.fhir('GET', '/ValueSet/_history')).body.total, 0);
      const withShared = await server.fhir('GET', '/_history?_count=1000&shared=true');
      assert.ok(types(withShared.body).some((e) => e.fullUrl.endsWith(`/ValueSet/${vs.body.entry[0].resource.id}`)));
      assert.ok((await server.fhir('GET', '/ValueSet/_history?shared=true')).body.total >= 1);
      assert.equal((await server.fhir('GET', `/ValueSet/${vs.body.entry[0].resource.id}/_history`)).body.total, 1);
      const bad = await server.fhir('GET', '/_history?shared=maybe');
      assert.equal(bad.status, 400);
      assert.equal(ooText(bad.body), "Invalid value 'maybe' for shared: expected true or false");
    });
  });
}
