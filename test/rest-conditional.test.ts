import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { MedplumClient } from '@medplum/core';
import type { Patient } from '@medplum/fhirtypes';
import { createMember, createProject, drivers, ooText, startServer, type TestProject, type TestServer } from './harness.js';

/** Conditional create (`If-None-Exist`), conditional update and delete (docs/rest.md#conditional-create). */
for (const driver of drivers) {
  describe(`conditional interactions (${driver})`, () => {
    let server: TestServer;
    let project: TestProject;
    before(async () => {
      server = await startServer(driver);
      project = await createProject(server, 'Conditional');
    });
    after(() => server.stop());

    const as = (token?: string) => ({ token: token ?? project.adminToken });
    const system = 'http://example.org/mrn';
    const uniqueId = () => randomBytes(6).toString('hex');
    const patient = (mrn: string, extra: Record<string, unknown> = {}) => ({
      resourceType: 'Patient',
      identifier: [{ system, value: mrn }],
      ...extra,
    });
    const count = async (mrn: string): Promise<number> =>
      (await server.fhir('GET', `/Patient?identifier=${encodeURIComponent(`${system}|${mrn}`)}&_summary=count`, as())).body.total;

    test('If-None-Exist: no match → 201, one match → 200 with the existing resource and no new version', async () => {
      const mrn = uniqueId();
      const header = { 'if-none-exist': `identifier=${system}|${mrn}` };
      const first = await server.fhir('POST', '/Patient', { ...as(), body: patient(mrn), headers: header });
      assert.equal(first.status, 201, first.text);
      const second = await server.fhir('POST', '/Patient', { ...as(), body: patient(mrn, { gender: 'male' }), headers: header });
      assert.equal(second.status, 200, second.text);
      assert.equal(second.body.id, first.body.id);
      assert.equal(second.body.meta.versionId, '1');
      assert.equal(second.body.gender, undefined);
      assert.equal(second.headers.get('etag'), 'W/"1"');
      // a leading `Type?` is accepted too
      const third = await server.fhir('POST', '/Patient', { ...as(), body: patient(mrn), headers: { 'if-none-exist': `Patient?identifier=${system}|${mrn}` } });
      assert.equal(third.status, 200);
      assert.equal(await count(mrn), 1);
    });

    test('If-None-Exist with several matches → 412 Multiple matches; unknown parameter → 400; empty criteria → 400', async () => {
      const mrn = uniqueId();
      await server.fhir('POST', '/Patient', { ...as(), body: patient(mrn) });
      await server.fhir('POST', '/Patient', { ...as(), body: patient(mrn) });
      const res = await server.fhir('POST', '/Patient', { ...as(), body: patient(mrn), headers: { 'if-none-exist': `identifier=${system}|${mrn}` } });
      assert.equal(res.status, 412);
      assert.equal(res.body.issue[0].code, 'conflict');
      assert.equal(ooText(res.body), 'Multiple matches');
      const unknown = await server.fhir('POST', '/Patient', { ...as(), body: patient(mrn), headers: { 'if-none-exist': 'nonsense=1' } });
      assert.equal(unknown.status, 400);
      assert.equal(ooText(unknown.body), 'Unknown search parameter: nonsense');
      const empty = await server.fhir('POST', '/Patient', { ...as(), body: patient(mrn), headers: { 'if-none-exist': '_count=1' } });
      assert.equal(empty.status, 400);
      assert.equal(ooText(empty.body), 'If-None-Exist needs search parameters');
      assert.equal(await count(mrn), 2);
    });

    test('If-None-Exist searches only the caller\'s project', async () => {
      const mrn = uniqueId();
      const other = await createProject(server, 'Conditional other');
      const mine = await server.fhir('POST', '/Patient', { ...as(), body: patient(mrn), headers: { 'if-none-exist': `identifier=${system}|${mrn}` } });
      assert.equal(mine.status, 201);
      const theirs = await server.fhir('POST', '/Patient', { ...as(other.adminToken), body: patient(mrn), headers: { 'if-none-exist': `identifier=${system}|${mrn}` } });
      assert.equal(theirs.status, 201);
      assert.notEqual(theirs.body.id, mine.body.id);
    });

    test('20 concurrent identical If-None-Exist POSTs create exactly one resource', async () => {
      const mrn = uniqueId();
      const answers = await Promise.all(
        Array.from({ length: 20 }, () =>
          server.fhir('POST', '/Patient', { ...as(), body: patient(mrn), headers: { 'if-none-exist': `identifier=${system}|${mrn}` } }),
        ),
      );
      const statuses = answers.map((a) => a.status).sort();
      assert.deepEqual(statuses, [...Array<number>(19).fill(200), 201], answers.map((a) => a.text).join('\n'));
      assert.equal(new Set(answers.map((a) => a.body.id)).size, 1);
      assert.equal(await count(mrn), 1);
    });

    test('30 concurrent If-None-Exist POSTs with 8 spellings of one search create exactly one resource', async () => {
      // A plain member can create patients; the spellings mean the same search (docs/rest.md#conditional-create).
      const member = await createMember(server, project.projectId);
      const mrn = uniqueId();
      const value = `${system}|${mrn}`;
      const spellings = [
        `identifier=${value}`,
        `Patient?identifier=${value}`,
        `identifier=${encodeURIComponent(value)}`,
        `identifier=${system}%7c${mrn}`,
        `&identifier=${value}&&_count=5`,
        `_summary=count&identifier=${value}`,
        `identifier=${value}&identifier=${encodeURIComponent(value)}`,
        `identifier=${value},${value}`,
      ];
      const answers = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          server.fhir('POST', '/Patient', { token: member.token, body: patient(mrn), headers: { 'if-none-exist': spellings[i % spellings.length] } }),
        ),
      );
      const statuses = answers.map((a) => a.status).sort();
      assert.deepEqual(statuses, [...Array<number>(29).fill(200), 201], answers.map((a) => a.text).join('\n'));
      assert.equal(new Set(answers.map((a) => a.body.id)).size, 1);
      assert.equal(await count(mrn), 1);
    });

    test('MedplumClient.createResourceIfNoneExist, twice and concurrently → one resource', async () => {
      const medplum = new MedplumClient({ baseUrl: `${server.baseUrl}/`, fetch, storage: undefined });
      medplum.setAccessToken(project.adminToken);
      const mrn = uniqueId();
      const body: Patient = { resourceType: 'Patient', identifier: [{ system, value: mrn }] };
      const query = `identifier=${system}|${mrn}`;
      const a = await medplum.createResourceIfNoneExist(body, query);
      const b = await medplum.createResourceIfNoneExist(body, query);
      assert.equal(a.id, b.id);
      const mrn2 = uniqueId();
      const body2: Patient = { resourceType: 'Patient', identifier: [{ system, value: mrn2 }] };
      const many = await Promise.all(Array.from({ length: 5 }, () => medplum.createResourceIfNoneExist(body2, `identifier=${system}|${mrn2}`)));
      assert.equal(new Set(many.map((p) => p.id)).size, 1);
      assert.equal(await count(mrn2), 1);
    });

    test('a transaction resolves 1,000 identical ifNoneExist entries once: one Patient; later entries and their fullUrls refer to it', async () => {
      const mrn = uniqueId();
      const urn = (i: number) => `urn:uuid:00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
      const entries: unknown[] = [];
      for (let i = 0; i < 1000; i++) {
        entries.push({
          // Half with a fullUrl, half without; the criteria spelled two ways (same meaning).
          ...(i % 2 === 0 ? { fullUrl: urn(i) } : {}),
          resource: patient(mrn),
          request: { method: 'POST', url: 'Patient', ifNoneExist: i % 3 === 0 ? `identifier=${system}|${mrn}` : `Patient?identifier=${encodeURIComponent(`${system}|${mrn}`)}&_count=5` },
        });
      }
      // An Observation about the 500th entry's Patient.
      entries.push({ resource: { resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: { reference: urn(500) } }, request: { method: 'POST', url: 'Observation' } });
      const res = await server.fhir('POST', '', { ...as(), body: { resourceType: 'Bundle', type: 'transaction', entry: entries } });
      assert.equal(res.status, 200, res.text.slice(0, 500));
      assert.equal(await count(mrn), 1);
      const id = res.body.entry[0].resource.id;
      assert.equal(res.body.entry[0].response.status, '201 Created');
      for (let i = 1; i < 1000; i++) {
        assert.equal(res.body.entry[i].response.status, '200 OK', `entry ${i}`);
        assert.equal(res.body.entry[i].resource.id, id, `entry ${i}`);
      }
      assert.equal(res.body.entry[1000].resource.subject.reference, `Patient/${id}`);
      // Run again: every entry now matches the stored Patient.
      const again = await server.fhir('POST', '', { ...as(), body: { resourceType: 'Bundle', type: 'transaction', entry: entries.slice(0, 1000) } });
      assert.equal(again.status, 200, again.text.slice(0, 500));
      assert.ok(again.body.entry.every((e: { response: { status: string }; resource: { id: string } }) => e.response.status === '200 OK' && e.resource.id === id));
      assert.equal(await count(mrn), 1);
    });

    test('conditional update: no match → 201, one match → 200 new version, several → 412, id mismatch → 400', async () => {
      const mrn = uniqueId();
      const url = `/Patient?identifier=${encodeURIComponent(`${system}|${mrn}`)}`;
      const created = await server.fhir('PUT', url, { ...as(), body: patient(mrn) });
      assert.equal(created.status, 201, created.text);
      assert.ok(created.headers.get('location'));
      const updated = await server.fhir('PUT', url, { ...as(), body: patient(mrn, { gender: 'female' }) });
      assert.equal(updated.status, 200, updated.text);
      assert.equal(updated.body.id, created.body.id);
      assert.equal(updated.body.meta.versionId, '2');
      const wrongId = await server.fhir('PUT', url, { ...as(), body: patient(mrn, { id: 'someone-else' }) });
      assert.equal(wrongId.status, 400);
      assert.equal(ooText(wrongId.body), 'Resource ID does not match the matched resource');
      const stale = await server.fhir('PUT', url, { ...as(), body: patient(mrn), headers: { 'if-match': 'W/"1"' } });
      assert.equal(stale.status, 412);
      assert.equal(ooText(stale.body), 'Version mismatch');
      await server.fhir('POST', '/Patient', { ...as(), body: patient(mrn) });
      const several = await server.fhir('PUT', url, { ...as(), body: patient(mrn) });
      assert.equal(several.status, 412);
      assert.equal(ooText(several.body), 'Multiple matches');
      const unknown = await server.fhir('PUT', '/Patient?bogus=1', { ...as(), body: patient(mrn) });
      assert.equal(unknown.status, 400);
      assert.equal(ooText(unknown.body), 'Unknown search parameter: bogus');
      const none = await server.fhir('PUT', '/Patient', { ...as(), body: patient(mrn) });
      assert.equal(none.status, 400);
      assert.equal(ooText(none.body), 'Conditional update needs search parameters');
    });

    test('conditional update with no match and a client id creates that id; a taken id that does not match → 409', async () => {
      const mrn = uniqueId();
      const id = `cond-${mrn}`;
      const url = `/Patient?identifier=${encodeURIComponent(`${system}|${mrn}`)}`;
      const created = await server.fhir('PUT', url, { ...as(), body: patient(mrn, { id }) });
      assert.equal(created.status, 201, created.text);
      assert.equal(created.body.id, id);
      const other = uniqueId();
      const taken = await server.fhir('PUT', `/Patient?identifier=${encodeURIComponent(`${system}|${other}`)}`, { ...as(), body: patient(other, { id }) });
      assert.equal(taken.status, 409);
      assert.equal(ooText(taken.body), `Resource Patient/${id} exists but does not match the search`);
    });

    test('conditional delete: no match → 200, one match → deleted, several → 412', async () => {
      const mrn = uniqueId();
      const url = `/Patient?identifier=${encodeURIComponent(`${system}|${mrn}`)}`;
      const nothing = await server.fhir('DELETE', url, as());
      assert.equal(nothing.status, 200);
      assert.equal(ooText(nothing.body), 'No match: nothing deleted');
      const created = (await server.fhir('POST', '/Patient', { ...as(), body: patient(mrn) })).body;
      const del = await server.fhir('DELETE', url, as());
      assert.equal(del.status, 200);
      assert.equal(ooText(del.body), 'Deleted');
      assert.equal((await server.fhir('GET', `/Patient/${created.id}`, as())).status, 410);
      await server.fhir('POST', '/Patient', { ...as(), body: patient(mrn) });
      await server.fhir('POST', '/Patient', { ...as(), body: patient(mrn) });
      const several = await server.fhir('DELETE', url, as());
      assert.equal(several.status, 412);
      assert.equal(ooText(several.body), 'Multiple matches');
      assert.equal(await count(mrn), 2);
      const unknown = await server.fhir('DELETE', '/Patient?bogus=1', as());
      assert.equal(unknown.status, 400);
      assert.equal(ooText(unknown.body), 'Unknown search parameter: bogus');
    });
  });
}
