import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { createClient, createMember, createProject, drivers, loginAs, ooText, startServer, tokenRequest, type TestProject, type TestServer } from './harness.js';
import { createPatientMember } from './support/smart.js';
import { call, exportedIds, kickOff, manifestOf } from './support/bulk-export.js';

/**
 * Bulk Data export (issue 36, docs/export.md) over real HTTP: what system, Patient and Group
 * exports contain (compared with searches), the parameters that narrow them, the refusals, and
 * who may poll and download.
 */
for (const driver of drivers) {
  describe(`Bulk Data $export (${driver})`, () => {
    let server: TestServer;
    let p: TestProject;
    let other: TestProject;
    const ids: Record<string, string> = {};
    let beforeLast: string;

    /** Ids of a search as the project admin (every page is one: the data set is small). */
    const searchIds = async (path: string): Promise<string[]> => {
      const res = await server.fhir('GET', `${path}${path.includes('?') ? '&' : '?'}_count=1000`, { token: p.adminToken });
      assert.equal(res.status, 200, res.text);
      return ((res.body.entry ?? []) as Array<{ resource: { id: string } }>).map((e) => e.resource.id).sort();
    };
    const create = async (resource: Record<string, unknown>, token = p.adminToken): Promise<string> => {
      const res = await server.fhir('POST', `/${resource.resourceType as string}`, { token, body: resource });
      assert.equal(res.status, 201, res.text);
      return res.body.id as string;
    };
    const subject = (key: string) => ({ subject: { reference: `Patient/${ids[key]}` } });
    const code = (c: string) => ({ code: { coding: [{ system: 'http://loinc.org', code: c }] } });

    before(async () => {
      server = await startServer(driver, { env: { LATTICE_EXPORT_PAGE: '2' } });
      p = await createProject(server, 'Export');
      other = await createProject(server, 'Export elsewhere');
      for (const key of ['p1', 'p2', 'p3']) ids[key] = await create({ resourceType: 'Patient', name: [{ family: key }] });
      ids.o1 = await create({ resourceType: 'Observation', status: 'final', ...code('1-1'), ...subject('p1') });
      ids.o2 = await create({ resourceType: 'Observation', status: 'final', ...code('2-2'), ...subject('p1') });
      ids.o3 = await create({ resourceType: 'Observation', status: 'final', ...code('1-1'), ...subject('p2') });
      ids.o4 = await create({ resourceType: 'Observation', status: 'final', ...code('1-1') });
      ids.e1 = await create({ resourceType: 'Encounter', status: 'finished', class: { code: 'AMB' }, ...subject('p3') });
      ids.org = await create({ resourceType: 'Organization', name: 'Clinic' });
      ids.g = await create({
        resourceType: 'Group',
        type: 'person',
        actual: true,
        member: [{ entity: { reference: `Patient/${ids.p1}` } }, { entity: { reference: `Patient/${ids.p2}` } }, { entity: { reference: `Patient/${ids.p3}` }, inactive: true }],
      });
      ids.elsewhere = await create({ resourceType: 'Patient', name: [{ family: 'elsewhere' }] }, other.adminToken);
      beforeLast = new Date().toISOString();
      await sleep(5);
      ids.o5 = await create({ resourceType: 'Observation', status: 'final', ...code('3-3'), ...subject('p2') });
    });
    after(() => server.stop());

    test('a system export holds exactly the project\'s resources of each type, as searches find them', async () => {
      const statusUrl = await kickOff(server.baseUrl, p.adminToken, '/$export');
      assert.ok(statusUrl.startsWith(`${server.baseUrl}/fhir/R4/$export-status/`), statusUrl);
      const manifest = await manifestOf(statusUrl, p.adminToken);
      assert.equal(manifest.requiresAccessToken, true);
      assert.equal(manifest.request, `${server.fhirUrl}/$export`);
      assert.ok(!Number.isNaN(Date.parse(manifest.transactionTime)));
      assert.deepEqual(manifest.error, []);
      const exported = await exportedIds(manifest, p.adminToken);
      // Accounts (Project, ProjectMembership, User) and shared content are not the project's data.
      assert.deepEqual(Object.keys(exported).sort(), ['Encounter', 'Group', 'Observation', 'Organization', 'Patient', 'Practitioner']);
      for (const type of Object.keys(exported)) assert.deepEqual(exported[type], await searchIds(`/${type}`), type);
      assert.equal(exported.Observation.length, 5);
      assert.ok(!exported.Patient.includes(ids.elsewhere));
    });

    test('without Prefer: respond-async the kick-off is refused', async () => {
      const res = await call(server.baseUrl, 'GET', '/fhir/R4/$export', { token: p.adminToken });
      assert.equal(res.status, 400);
      assert.equal(ooText(res.body), '$export runs asynchronously: send the header Prefer: respond-async');
    });

    test('an unsupported parameter is 400 naming it, unless the client asks for lenient handling', async () => {
      const strict = await call(server.baseUrl, 'GET', '/fhir/R4/$export?_type=Patient&_bogus=1&includeAssociatedData=LatestProvenanceResources', {
        token: p.adminToken,
        headers: { prefer: 'respond-async' },
      });
      assert.equal(strict.status, 400);
      assert.equal(ooText(strict.body), 'Unsupported $export parameters: _bogus, includeAssociatedData (send Prefer: handling=lenient to have them ignored)');
      const lenient = await call(server.baseUrl, 'GET', '/fhir/R4/$export?_type=Patient&_bogus=1', { token: p.adminToken, headers: { prefer: 'respond-async, handling=lenient' } });
      assert.equal(lenient.status, 202, lenient.text);
      const manifest = await manifestOf(lenient.headers.get('content-location') as string, p.adminToken);
      assert.deepEqual(manifest.output.map((o) => o.type), ['Patient']);
    });

    test('_outputFormat takes ndjson and its aliases; another format is 400', async () => {
      for (const format of ['application/fhir+ndjson', 'application/ndjson', 'ndjson']) {
        const manifest = await manifestOf(await kickOff(server.baseUrl, p.adminToken, `/$export?_type=Organization&_outputFormat=${encodeURIComponent(format)}`), p.adminToken);
        assert.deepEqual(manifest.output.map((o) => [o.type, o.count]), [['Organization', 1]]);
      }
      const res = await call(server.baseUrl, 'GET', '/fhir/R4/$export?_outputFormat=text/csv', { token: p.adminToken, headers: { prefer: 'respond-async' } });
      assert.equal(res.status, 400);
      assert.equal(ooText(res.body), "Unsupported _outputFormat 'text/csv': supported are application/fhir+ndjson, application/ndjson, ndjson");
    });

    test('_type and _since narrow the export', async () => {
      const byType = await exportedIds(await manifestOf(await kickOff(server.baseUrl, p.adminToken, '/$export?_type=Patient,Encounter'), p.adminToken), p.adminToken);
      assert.deepEqual(byType, { Encounter: [ids.e1], Patient: [ids.p1, ids.p2, ids.p3].sort() });
      const since = await exportedIds(await manifestOf(await kickOff(server.baseUrl, p.adminToken, `/$export?_since=${encodeURIComponent(beforeLast)}`), p.adminToken), p.adminToken);
      assert.deepEqual(since, { Observation: [ids.o5] });
    });

    test('_typeFilter exports the matches of a search of that type', async () => {
      const manifest = await manifestOf(
        await kickOff(server.baseUrl, p.adminToken, `/$export?_type=Observation,Organization&_typeFilter=${encodeURIComponent('Observation?code=http://loinc.org|1-1')}`),
        p.adminToken,
      );
      const exported = await exportedIds(manifest, p.adminToken);
      assert.deepEqual(exported.Observation, await searchIds('/Observation?code=http://loinc.org|1-1'));
      assert.deepEqual(exported.Observation, [ids.o1, ids.o3, ids.o4].sort());
      assert.deepEqual(exported.Organization, [ids.org]);
      const bad = await call(server.baseUrl, 'GET', `/fhir/R4/$export?_typeFilter=${encodeURIComponent('Observation?_sort=date')}`, { token: p.adminToken, headers: { prefer: 'respond-async' } });
      assert.equal(bad.status, 400);
      assert.equal(ooText(bad.body), '_typeFilter Observation: _sort is not a search filter');
    });

    test('a Patient export holds every Patient compartment and nothing outside them', async () => {
      const exported = await exportedIds(await manifestOf(await kickOff(server.baseUrl, p.adminToken, '/Patient/$export'), p.adminToken), p.adminToken);
      // The Group is in its members' compartments (Group.member); the Organization in none.
      assert.deepEqual(Object.keys(exported).sort(), ['Encounter', 'Group', 'Observation', 'Patient']);
      const patients = [ids.p1, ids.p2, ids.p3];
      const inCompartments = async (type: string) => [...new Set((await Promise.all(patients.map((id) => searchIds(`/Patient/${id}/${type}`)))).flat())].sort();
      assert.deepEqual(exported.Patient, await searchIds('/Patient'));
      for (const type of ['Encounter', 'Group', 'Observation']) assert.deepEqual(exported[type], await inCompartments(type), type);
      assert.ok(!exported.Observation.includes(ids.o4), 'an Observation without a subject is in no compartment');
    });

    test('a Group export holds its active members\' compartments', async () => {
      const manifest = await manifestOf(await kickOff(server.baseUrl, p.adminToken, `/Group/${ids.g}/$export`), p.adminToken);
      assert.equal(manifest.request, `${server.fhirUrl}/Group/${ids.g}/$export`);
      const exported = await exportedIds(manifest, p.adminToken);
      const members = [ids.p1, ids.p2];
      const inCompartments = async (type: string) => [...new Set((await Promise.all(members.map((id) => searchIds(`/Patient/${id}/${type}`)))).flat())].sort();
      assert.deepEqual(exported, { Group: await inCompartments('Group'), Observation: await inCompartments('Observation'), Patient: members.sort() });
      assert.deepEqual(exported.Group, [ids.g]);
    });

    test('POST patient narrows a Group export; a patient outside the group is 400', async () => {
      const body = (id: string) => ({ resourceType: 'Parameters', parameter: [{ name: 'patient', valueReference: { reference: `Patient/${id}` } }, { name: '_type', valueString: 'Patient,Observation' }] });
      const exported = await exportedIds(await manifestOf(await kickOff(server.baseUrl, p.adminToken, `/Group/${ids.g}/$export`, body(ids.p2)), p.adminToken), p.adminToken);
      assert.deepEqual(exported, { Observation: [ids.o3, ids.o5].sort(), Patient: [ids.p2] });
      const res = await call(server.baseUrl, 'POST', `/fhir/R4/Group/${ids.g}/$export`, { token: p.adminToken, body: body(ids.p3), headers: { prefer: 'respond-async' } });
      assert.equal(res.status, 400);
      assert.equal(ooText(res.body), `patient Patient/${ids.p3} is not a member of Group/${ids.g}`);
    });

    test('_elements keeps the named elements and tags the resources SUBSETTED', async () => {
      const manifest = await manifestOf(await kickOff(server.baseUrl, p.adminToken, '/$export?_type=Patient&_elements=name'), p.adminToken);
      const res = await call('', 'GET', manifest.output[0].url, { token: p.adminToken });
      const first = JSON.parse(res.text.split('\n')[0]) as Record<string, unknown> & { meta: { tag: Array<{ code: string }> } };
      assert.deepEqual(Object.keys(first).sort(), ['id', 'meta', 'name', 'resourceType']);
      assert.ok(first.meta.tag.some((t) => t.code === 'SUBSETTED'));
    });

    test('a plain member may not start a system export', async () => {
      const member = await createMember(server, p.projectId);
      const res = await call(server.baseUrl, 'GET', '/fhir/R4/$export', { token: member.token, headers: { prefer: 'respond-async' } });
      assert.equal(res.status, 403);
      assert.equal(ooText(res.body), 'A system-level $export needs a system/ read scope (e.g. system/*.rs) or a project admin');
    });

    test('a client with system/Patient.rs exports Patients only; asking for another type is 403', async () => {
      const client = await createClient(server, p.projectId, { token: p.adminToken, name: 'Bulk client' });
      const res = await tokenRequest(server, { grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.secret, scope: 'system/Patient.rs' });
      assert.equal(res.status, 200, res.text);
      const token = res.body.access_token as string;
      const exported = await exportedIds(await manifestOf(await kickOff(server.baseUrl, token, '/$export'), token), token);
      assert.deepEqual(exported, { Patient: await searchIds('/Patient') });
      const refused = await call(server.baseUrl, 'GET', '/fhir/R4/$export?_type=Observation', { token, headers: { prefer: 'respond-async' } });
      assert.equal(refused.status, 403);
      assert.equal(ooText(refused.body), 'Your access does not allow searching Observation');
    });

    test('a patient user\'s Patient export is its own record', async () => {
      const person = await createPatientMember(server, p.projectId);
      await create({ resourceType: 'Observation', status: 'final', ...code('9-9'), subject: { reference: `Patient/${person.patientId}` } });
      const token = await loginAs(server, person.email, person.password, p.projectId);
      const exported = await exportedIds(await manifestOf(await kickOff(server.baseUrl, token, '/Patient/$export?_type=Patient,Observation'), token), token);
      const own = async (type: string) => {
        const res = await server.fhir('GET', `/Patient/${person.patientId}/${type}`, { token: p.adminToken });
        return ((res.body.entry ?? []) as Array<{ resource: { id: string } }>).map((e) => e.resource.id).sort();
      };
      assert.deepEqual(exported, { Observation: await own('Observation'), Patient: [person.patientId] });
    });

    test('an invalid _since or _type is 400', async () => {
      for (const [query, text] of [
        ['_since=yesterday', "Invalid _since 'yesterday': expected an instant such as 2024-01-01T00:00:00Z"],
        ['_type=Nonsense', 'Unknown resource type in _type: Nonsense'],
        ['_type=User', '_type User cannot be exported'],
      ]) {
        const res = await call(server.baseUrl, 'GET', `/fhir/R4/$export?${query}`, { token: p.adminToken, headers: { prefer: 'respond-async' } });
        assert.equal(res.status, 400, query);
        assert.equal(ooText(res.body), text, query);
      }
      const patientLevel = await call(server.baseUrl, 'GET', '/fhir/R4/Patient/$export?_type=Organization', { token: p.adminToken, headers: { prefer: 'respond-async' } });
      assert.equal(ooText(patientLevel.body), '_type Organization is not in the Patient compartment');
    });

    test('only the caller that started an export polls and downloads it; another project\'s caller gets 404', async () => {
      const statusUrl = await kickOff(server.baseUrl, p.adminToken, '/$export?_type=Patient');
      const manifest = await manifestOf(statusUrl, p.adminToken);
      const fileUrl = manifest.output[0].url;
      const colleague = await createMember(server, p.projectId, { admin: true });
      for (const token of [other.adminToken, colleague.token]) {
        const polled = await call('', 'GET', statusUrl, { token });
        assert.equal(polled.status, 404);
        assert.equal(ooText(polled.body), 'Export job not found (unknown, expired or cancelled)');
        assert.equal((await call('', 'GET', fileUrl, { token })).status, 404);
        assert.equal((await call('', 'DELETE', statusUrl, { token })).status, 404);
      }
      assert.equal((await call('', 'GET', fileUrl, {})).status, 401, 'files need the access token');
      assert.equal((await call('', 'GET', fileUrl, { token: p.adminToken })).status, 200);
    });

    test('DELETE of the status URL cancels the export and removes its files', async () => {
      const statusUrl = await kickOff(server.baseUrl, p.adminToken, '/$export?_type=Observation');
      const manifest = await manifestOf(statusUrl, p.adminToken);
      const deleted = await call('', 'DELETE', statusUrl, { token: p.adminToken });
      assert.equal(deleted.status, 202, deleted.text);
      assert.equal((await call('', 'GET', statusUrl, { token: p.adminToken })).status, 404);
      assert.equal((await call('', 'GET', manifest.output[0].url, { token: p.adminToken })).status, 404);
      const rows = await server.app.db.query<{ n: number }>('SELECT count(*)::int AS n FROM export_chunk WHERE job_id = $1', [statusUrl.split('/').pop()]);
      assert.equal(rows.rows[0].n, 0);
    });

    test('a type the job cannot export is said in the manifest\'s error file, and the others are exported', async () => {
      const statusUrl = await kickOff(server.baseUrl, p.adminToken, '/$export?_type=Organization');
      await manifestOf(statusUrl, p.adminToken);
      const [job] = (await server.app.db.query<{ owner: string; auth: unknown }>('SELECT owner, auth FROM export_job WHERE id = $1', [statusUrl.split('/').pop()])).rows;
      // A job whose filter no longer runs when the page is read (written as a kick-off would).
      const id = randomUUID();
      const plan = { level: 'system', types: ['Observation', 'Organization'], typeFilters: { Observation: [[['bogus', '1']]] } };
      await server.app.db.query(
        `INSERT INTO export_job (id, project_id, owner, auth, request_url, plan, transaction_time) VALUES ($1, $2, $3, $4, 'x', $5, now())`,
        [id, p.projectId, job.owner, JSON.stringify(job.auth), JSON.stringify(plan)],
      );
      await manifestOf(await kickOff(server.baseUrl, p.adminToken, '/$export?_type=Organization'), p.adminToken); // a kick-off wakes the runner
      const manifest = await manifestOf(statusUrl.replace(/[^/]+$/, id), p.adminToken);
      assert.deepEqual(manifest.output.map((o) => o.type), ['Organization']);
      assert.deepEqual(manifest.error.map((e) => [e.type, e.count]), [['OperationOutcome', 1]]);
      const errors = await call('', 'GET', manifest.error[0].url, { token: p.adminToken });
      const outcome = JSON.parse(errors.text.trim()) as { resourceType: string; issue: Array<{ details: { text: string } }> };
      assert.equal(outcome.resourceType, 'OperationOutcome');
      assert.match(outcome.issue[0].details.text, /^Observation was not exported: .*bogus/);
    });

    test('a caller with LATTICE_EXPORT_MAX_JOBS exports in progress is told 429 with Retry-After', async () => {
      const statusUrl = await kickOff(server.baseUrl, p.adminToken, '/$export?_type=Patient');
      await manifestOf(statusUrl, p.adminToken);
      const [job] = (await server.app.db.query<{ owner: string; auth: unknown; plan: unknown }>('SELECT owner, auth, plan FROM export_job WHERE id = $1', [statusUrl.split('/').pop()])).rows;
      // Two jobs of this caller that another node is running (their leases are live).
      const running = [randomUUID(), randomUUID()];
      for (const id of running) {
        await server.app.db.query(
          `INSERT INTO export_job (id, project_id, owner, auth, request_url, plan, transaction_time, state, lease_owner, lease_until)
           VALUES ($1, $2, $3, $4, 'x', $5, now(), 'running', 'another-node', now() + interval '1 hour')`,
          [id, p.projectId, job.owner, JSON.stringify(job.auth), JSON.stringify(job.plan)],
        );
      }
      try {
        const res = await call(server.baseUrl, 'GET', '/fhir/R4/$export', { token: p.adminToken, headers: { prefer: 'respond-async' } });
        assert.equal(res.status, 429);
        assert.equal(ooText(res.body), 'Too many exports in progress: at most 2 per caller (LATTICE_EXPORT_MAX_JOBS); retry when one has finished');
        assert.ok(Number(res.headers.get('retry-after')) > 0);
        // Another caller is not held back by them.
        assert.ok(await kickOff(server.baseUrl, other.adminToken, '/$export?_type=Patient'));
        const polled = await call(server.baseUrl, 'GET', `/fhir/R4/$export-status/${running[0]}`, { token: p.adminToken });
        assert.equal(polled.status, 202, 'a job leased by a live node is in progress');
        assert.ok(polled.headers.get('x-progress'));
      } finally {
        await server.app.db.query('DELETE FROM export_job WHERE id = ANY($1::text[])', [running]);
      }
    });
  });
}

for (const driver of drivers) {
  describe(`Bulk Data $export runs beside requests (${driver})`, () => {
    test('the kick-off is answered, and polls are, while the job is still running', async () => {
      // One resource a page: a job of many pages. Before the runner yielded between pages, the
      // embedded database's job held the event loop, and the kick-off's 202 came after it ended.
      const server = await startServer(driver, { env: { LATTICE_EXPORT_PAGE: '1' } });
      try {
        const token = server.adminToken as string;
        const entry = Array.from({ length: 300 }, (_, i) => ({ resource: { resourceType: 'Observation', status: 'final', code: { text: `o${i}` } }, request: { method: 'POST', url: 'Observation' } }));
        const loaded = await call(server.baseUrl, 'POST', '/fhir/R4', { token, body: { resourceType: 'Bundle', type: 'transaction', entry } });
        assert.equal(loaded.status, 200, loaded.text);
        const statusUrl = await kickOff(server.baseUrl, token, '/$export?_type=Observation');
        const first = await call('', 'GET', statusUrl, { token });
        assert.equal(first.status, 202, 'still running');
        assert.match(first.headers.get('x-progress') ?? '', /^(queued|\d+ resources exported; type 1 of 1 \(Observation\))$/);
        assert.equal(first.headers.get('retry-after'), '2');
        const manifest = await manifestOf(statusUrl, token);
        assert.deepEqual(manifest.output.map((o) => [o.type, o.count]), [['Observation', 300]]);
      } finally {
        await server.stop();
      }
    });
  });
}
