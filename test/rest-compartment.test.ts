import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createProject, drivers, ooText, startServer, type ApiResponse, type TestProject, type TestServer } from './harness.js';

/** Patient compartment search and Patient/$everything (docs/rest.md#compartment-search, docs/rest.md#everything). */
const ids = (res: ApiResponse): string[] => (res.body.entry ?? []).map((e: { resource: { resourceType: string; id: string } }) => `${e.resource.resourceType}/${e.resource.id}`);

for (const driver of drivers) {
  describe(`Patient compartment (${driver})`, () => {
    let server: TestServer;
    let other: TestProject;
    let patient: string;
    let otherPatient: string;
    let obs1: string;
    let obs2: string;
    let performed: string;
    let condition: string;
    let encounter: string;
    before(async () => {
      server = await startServer(driver);
      other = await createProject(server, 'Compartment other');
      const create = async (body: Record<string, unknown>, token?: string): Promise<string> => {
        const res = await server.fhir('POST', `/${body.resourceType as string}`, { body, token });
        assert.equal(res.status, 201, res.text);
        return res.body.id;
      };
      patient = await create({ resourceType: 'Patient', name: [{ family: 'Compartment' }] });
      otherPatient = await create({ resourceType: 'Patient', name: [{ family: 'Elsewhere' }] });
      obs1 = await create({ resourceType: 'Observation', status: 'final', code: { text: 'heart rate' }, subject: { reference: `Patient/${patient}` } });
      obs2 = await create({ resourceType: 'Observation', status: 'amended', code: { text: 'weight' }, subject: { reference: `Patient/${patient}` } });
      performed = await create({ resourceType: 'Observation', status: 'final', code: { text: 'by the patient' }, subject: { reference: `Patient/${otherPatient}` }, performer: [{ reference: `Patient/${patient}` }] });
      await create({ resourceType: 'Observation', status: 'final', code: { text: 'not theirs' }, subject: { reference: `Patient/${otherPatient}` } });
      condition = await create({ resourceType: 'Condition', subject: { reference: `Patient/${patient}` } });
      encounter = await create({ resourceType: 'Encounter', status: 'finished', class: { code: 'AMB' }, subject: { reference: `Patient/${patient}` } });
      // Not in the compartment.
      await create({ resourceType: 'Practitioner', name: [{ family: 'Doc' }] });
    });
    after(() => server.stop());

    test('GET Patient/<id>/Observation lists the observations whose compartment parameters point at the patient', async () => {
      const res = await server.fhir('GET', `/Patient/${patient}/Observation`);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.type, 'searchset');
      assert.equal(res.body.total, 3);
      assert.deepEqual(ids(res).sort(), [`Observation/${obs1}`, `Observation/${obs2}`, `Observation/${performed}`].sort());
      assert.equal(res.body.link[0].url, `${server.fhirUrl}/Patient/${patient}/Observation`);
    });

    test('search parameters combine with the compartment; paging links stay in the compartment', async () => {
      const res = await server.fhir('GET', `/Patient/${patient}/Observation?status=final&_count=1`);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.total, 2); // every page carries the total
      assert.equal(res.body.entry.length, 1);
      const next = res.body.link.find((l: { relation: string }) => l.relation === 'next').url as string;
      // The next link pages by keyset (docs/rest.md#query-plans): `_offset` and the last match's `_cursor`.
      const cursor = new URL(next).searchParams.get('_cursor');
      assert.match(cursor ?? '', /^[A-Za-z0-9_-]+$/);
      assert.equal(next, `${server.fhirUrl}/Patient/${patient}/Observation?status=final&_count=1&_offset=1&_cursor=${cursor}`);
      const page2 = await server.request('GET', next.slice(server.baseUrl.length));
      assert.equal(page2.status, 200, page2.text);
      assert.equal(page2.body.total, 2); // the last page knows it
      assert.deepEqual([...ids(res), ...ids(page2)].sort(), [`Observation/${obs1}`, `Observation/${performed}`].sort());
    });

    test('an unknown search parameter in a compartment search → 400 as in any search', async () => {
      const res = await server.fhir('GET', `/Patient/${patient}/Observation?nope=1`);
      assert.equal(res.status, 400);
      assert.equal(ooText(res.body), 'Unknown search parameter: nope');
    });

    test('Patient/<id>/* lists every resource of the compartment, the patient included; _type narrows it', async () => {
      const all = await server.fhir('GET', `/Patient/${patient}/*`);
      assert.equal(all.status, 200, all.text);
      assert.deepEqual(
        ids(all).sort(),
        [`Patient/${patient}`, `Observation/${obs1}`, `Observation/${obs2}`, `Observation/${performed}`, `Condition/${condition}`, `Encounter/${encounter}`].sort(),
      );
      const some = await server.fhir('GET', `/Patient/${patient}/*?_type=Condition,Encounter`);
      assert.deepEqual(ids(some).sort(), [`Condition/${condition}`, `Encounter/${encounter}`].sort());
      const bad = await server.fhir('GET', `/Patient/${patient}/*?_type=Nope`);
      assert.equal(bad.status, 400);
      assert.equal(ooText(bad.body), "Invalid value 'Nope' for _type: not a resource type");
      const param = await server.fhir('GET', `/Patient/${patient}/*?status=final`);
      assert.equal(param.status, 400);
      assert.equal(ooText(param.body), 'Search parameter status is not supported across resource types');
    });

    test('a type outside the Patient compartment → 400', async () => {
      const res = await server.fhir('GET', `/Patient/${patient}/ValueSet`);
      assert.equal(res.status, 400);
      assert.equal(ooText(res.body), 'Resource type ValueSet is not in the Patient compartment');
    });

    test("another project's patient, an unknown patient → 404; a deleted one → 410", async () => {
      const theirs = await server.fhir('POST', '/Patient', { token: other.adminToken, body: { resourceType: 'Patient' } });
      assert.equal((await server.fhir('GET', `/Patient/${theirs.body.id}/Observation`)).status, 404);
      assert.equal((await server.fhir('GET', `/Patient/${theirs.body.id}/*`)).status, 404);
      assert.equal(ooText((await server.fhir('GET', '/Patient/no-such-patient/Observation')).body), 'Not found');
      const gone = await server.fhir('POST', '/Patient', { body: { resourceType: 'Patient' } });
      await server.fhir('DELETE', `/Patient/${gone.body.id}`);
      assert.equal((await server.fhir('GET', `/Patient/${gone.body.id}/Observation`)).status, 410);
    });

    test('Patient/<id>/$everything: the patient and its compartment, paged with next links', async () => {
      const all = await server.fhir('GET', `/Patient/${patient}/$everything`);
      assert.equal(all.status, 200, all.text);
      assert.equal(all.body.type, 'searchset');
      assert.equal(all.body.total, 6);
      assert.ok(ids(all).includes(`Patient/${patient}`));
      // What the compartment references comes along (search.mode include): the other patient
      // `performed` is about. The practitioner nothing references does not.
      const included = all.body.entry.filter((e: { search: { mode: string } }) => e.search.mode === 'include');
      assert.deepEqual(included.map((e: { resource: { id: string } }) => e.resource.id), [otherPatient]);
      assert.ok(!ids(all).some((id) => id.startsWith('Practitioner/')));
      const page1 = await server.fhir('GET', `/Patient/${patient}/$everything?_count=4`);
      assert.equal(page1.body.entry.filter((e: { search: { mode: string } }) => e.search.mode === 'match').length, 4);
      const next = page1.body.link.find((l: { relation: string }) => l.relation === 'next').url as string;
      assert.equal(next, `${server.fhirUrl}/Patient/${patient}/$everything?_count=4&_offset=4`);
      const page2 = await server.request('GET', next.slice(server.baseUrl.length));
      assert.equal(page2.status, 200, page2.text);
      const matches = (res: ApiResponse) => ids({ ...res, body: { entry: res.body.entry.filter((e: { search: { mode: string } }) => e.search.mode === 'match') } });
      assert.equal(matches(page2).length, 2);
      assert.deepEqual([...matches(page1), ...matches(page2)].sort(), matches(all).sort());
      const posted = await server.fhir('POST', `/Patient/${patient}/$everything`, { body: { resourceType: 'Parameters', parameter: [{ name: '_type', valueCode: 'Condition,Encounter' }] } });
      assert.deepEqual(ids(posted).sort(), [`Condition/${condition}`, `Encounter/${encounter}`, `Patient/${patient}`].sort()); // the patient as their reference
    });

    test('$everything _since keeps what changed since; bad inputs → 400; other project → 404', async () => {
      const later = new Date(Date.now() + 60_000).toISOString();
      const none = await server.fhir('GET', `/Patient/${patient}/$everything?_since=${encodeURIComponent(later)}`);
      assert.equal(none.status, 200, none.text);
      assert.equal(none.body.total, 0);
      const since = await server.fhir('GET', `/Patient/${patient}/$everything?_since=2000-01-01`);
      assert.equal(since.body.total, 6);
      const bad = await server.fhir('GET', `/Patient/${patient}/$everything?_since=yesterday`);
      assert.equal(bad.status, 400);
      assert.equal(ooText(bad.body), "Invalid value 'yesterday' for _since");
      const type = await server.fhir('GET', `/Patient/${patient}/$everything?_type=ValueSet`);
      assert.equal(type.status, 400);
      assert.equal(ooText(type.body), 'Resource type ValueSet is not in the Patient compartment');
      const count = await server.fhir('GET', `/Patient/${patient}/$everything?_count=-1`);
      assert.equal(count.status, 400);
      const theirs = await server.fhir('POST', '/Patient', { token: other.adminToken, body: { resourceType: 'Patient' } });
      assert.equal((await server.fhir('GET', `/Patient/${theirs.body.id}/$everything`)).status, 404);
      assert.equal((await server.fhir('GET', '/Patient/$everything')).status, 404);
    });

    test('the compartment path answers GET and HEAD only; other shapes name nothing', async () => {
      const post = await server.fhir('POST', `/Patient/${patient}/Observation`, { body: { resourceType: 'Observation' } });
      assert.equal(post.status, 405);
      assert.equal(post.headers.get('allow'), 'GET, HEAD');
      assert.equal((await server.fhir('GET', `/Observation/${obs1}/Patient`)).status, 404);
      assert.equal((await server.fhir('GET', `/Patient/${patient}/Nope`)).status, 404);
      assert.equal((await server.fhir('GET', `/Patient/bad%20id/Observation`)).status, 400);
    });
  });
}
