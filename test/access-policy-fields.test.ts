import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createMember, createProject, drivers, ooText, startServer, type TestMember, type TestProject, type TestServer } from './harness.js';
import { attachPolicy } from './support/smart.js';

/**
 * AccessPolicy `hiddenFields`, `readonlyFields` and `writeConstraint` (Medplum's access policy
 * fields, docs/auth.md#access-policies) over HTTP.
 */
for (const driver of drivers) {
  describe(`access policy fields (${driver})`, () => {
    let server: TestServer;
    let clinic: TestProject;
    let member: TestMember;
    before(async () => {
      server = await startServer(driver);
      clinic = await createProject(server, 'Fields clinic');
      member = await createMember(server, clinic.projectId);
      await attachPolicy(server, clinic.projectId, member.membershipId, {
        resource: [
          { resourceType: 'Patient', hiddenFields: ['birthDate', 'name.given'], readonlyFields: ['gender'] },
          // A final Observation cannot be changed.
          { resourceType: 'Observation', writeConstraint: [{ language: 'text/fhirpath', expression: "%before.exists() implies %before.status != 'final'" }] },
          // An admin's costly constraint: 4^12 evaluations (about a minute in one thread).
          { resourceType: 'Device', writeConstraint: [{ language: 'text/fhirpath', expression: COSTLY }] },
        ],
      });
    });
    after(() => server.stop());

    const asAdmin = { get token() { return clinic.adminToken; } };
    const asMember = () => ({ token: member.token });

    test('hidden fields are absent from read, search and history; hidden and read-only fields keep their stored value on write', async () => {
      const created = await server.fhir('POST', '/Patient', {
        ...asAdmin,
        body: { resourceType: 'Patient', gender: 'female', birthDate: '1980-02-03', name: [{ given: ['Ann'], family: 'Hidden' }] },
      });
      assert.equal(created.status, 201, created.text);
      const id = created.body.id;

      const read = await server.fhir('GET', `/Patient/${id}`, asMember());
      assert.equal(read.status, 200, read.text);
      assert.equal(read.body.birthDate, undefined);
      assert.deepEqual(read.body.name, [{ family: 'Hidden' }]);
      assert.equal(read.body.gender, 'female');
      const search = await server.fhir('GET', `/Patient?_id=${id}`, asMember());
      assert.equal(search.body.entry[0].resource.birthDate, undefined);
      assert.deepEqual(search.body.entry[0].resource.name, [{ family: 'Hidden' }]);
      // Searching or sorting by a hidden field would tell what it holds: 403.
      for (const query of ['birthdate=1980-02-03', 'name=Ann', 'given=Ann', '_sort=-birthdate']) {
        const refused = await server.fhir('GET', `/Patient?${query}`, asMember());
        assert.equal(refused.status, 403, `${query}: ${refused.text}`);
        assert.match(ooText(refused.body) ?? '', /^Forbidden: search parameter '(birthdate|name|given)' reads the hidden field (birthDate|name\.given)$/);
      }
      assert.equal((await server.fhir('GET', '/Patient?family=Hidden', asMember())).body.total, 1);
      const history = await server.fhir('GET', `/Patient/${id}/_history`, asMember());
      assert.equal(history.body.entry[0].resource.birthDate, undefined);
      // The admin (no policy) reads everything.
      assert.equal((await server.fhir('GET', `/Patient/${id}`, asAdmin)).body.birthDate, '1980-02-03');

      const updated = await server.fhir('PUT', `/Patient/${id}`, {
        ...asMember(),
        body: { resourceType: 'Patient', id, gender: 'male', birthDate: '1999-09-09', name: [{ given: ['Eve'], family: 'Changed' }] },
      });
      assert.equal(updated.status, 200, updated.text);
      assert.equal(updated.body.birthDate, undefined);
      assert.equal(updated.body.gender, 'female');
      const stored = (await server.fhir('GET', `/Patient/${id}`, asAdmin)).body;
      assert.equal(stored.gender, 'female');
      assert.equal(stored.birthDate, '1980-02-03');
      assert.deepEqual(stored.name, [{ given: ['Ann'], family: 'Changed' }]);

      // A create by the member cannot set them either.
      const own = await server.fhir('POST', '/Patient', { ...asMember(), body: { resourceType: 'Patient', gender: 'male', birthDate: '2001-01-01', name: [{ family: 'New' }] } });
      assert.equal(own.status, 201, own.text);
      const ownStored = (await server.fhir('GET', `/Patient/${own.body.id}`, asAdmin)).body;
      assert.equal(ownStored.gender, undefined);
      assert.equal(ownStored.birthDate, undefined);
    });

    test('a write constraint (FHIRPath with %before and %after) refuses the write it is not true for, with 403', async () => {
      const draft = await server.fhir('POST', '/Observation', { ...asMember(), body: { resourceType: 'Observation', status: 'preliminary', code: { text: 'bp' } } });
      assert.equal(draft.status, 201, draft.text);
      const final = await server.fhir('PUT', `/Observation/${draft.body.id}`, { ...asMember(), body: { ...draft.body, status: 'final' } });
      assert.equal(final.status, 200, final.text);
      const changed = await server.fhir('PUT', `/Observation/${draft.body.id}`, { ...asMember(), body: { ...final.body, status: 'amended' } });
      assert.equal(changed.status, 403, changed.text);
      assert.equal(ooText(changed.body), "Forbidden: the access policy's write constraint is not met: %before.exists() implies %before.status != 'final'");
      assert.equal((await server.fhir('GET', `/Observation/${draft.body.id}`, asAdmin)).body.status, 'final');
      // The admin has no policy: it may.
      assert.equal((await server.fhir('PUT', `/Observation/${draft.body.id}`, { ...asAdmin, body: { ...final.body, status: 'amended' } })).status, 200);
    });

    test('a write constraint that runs past LATTICE_FHIRPATH_TIMEOUT is stopped (403, nothing written) while the server answers others', async () => {
      const order: string[] = [];
      const costly = server.fhir('POST', '/Device', { ...asMember(), body: { resourceType: 'Device', status: 'active' } }).then((res) => {
        order.push('costly write');
        return res;
      });
      // Sent while the constraint is evaluated: a read by the same member and the health probe.
      const [read, health] = await Promise.all([server.fhir('GET', '/Observation?_count=1', asMember()), fetch(`${server.baseUrl}/healthz`)]);
      order.push('read and probe');
      assert.equal(read.status, 200, read.text);
      assert.ok(health.status === 200 || health.status === 503, `healthz ${health.status}`);
      const res = await costly;
      assert.equal(order[0], 'read and probe', 'the read and the probe were answered before the costly write');
      assert.equal(res.status, 403, res.text.slice(0, 300));
      assert.equal(res.body.issue[0].code, 'forbidden');
      assert.equal(ooText(res.body), `Forbidden: the access policy's write constraint was stopped after 1000 ms (LATTICE_FHIRPATH_TIMEOUT), so it is not shown to be met: ${COSTLY}`);
      assert.equal((await server.fhir('GET', '/Device', asAdmin)).body.total, 0);
      // The constraint on Observations still works (a new thread).
      const draft = await server.fhir('POST', '/Observation', { ...asMember(), body: { resourceType: 'Observation', status: 'preliminary', code: { text: 'after' } } });
      assert.equal(draft.status, 201, draft.text);
    });
  });
}

let nested = '1';
for (let level = 0; level < 12; level++) nested = `(1|2|3|4).select(${nested})`;
/** Within every expression bound, but about a minute of evaluation. */
const COSTLY = `${nested}.count() > 0`;
