import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createProject, drivers, ooText, startServer, type TestProject, type TestServer } from './harness.js';

/**
 * Referential integrity (docs/rest.md#referential-integrity): `Project.checkReferencesOnWrite`
 * refuses dangling references and deletes of referenced resources; without it FHIR's rule (no
 * checks). Conditional references in a plain create/update are resolved (docs/rest.md#conditional-references).
 */
for (const driver of drivers) {
  describe(`references that hold (${driver})`, () => {
    let server: TestServer;
    let checked: TestProject;
    let open: TestProject;
    before(async () => {
      server = await startServer(driver);
      checked = await createProject(server, 'Checks references');
      open = await createProject(server, 'Does not check');
      const put = await server.fhir('PUT', `/Project/${checked.projectId}`, { token: server.adminToken, body: { ...checked.project, checkReferencesOnWrite: true } });
      assert.equal(put.status, 200, put.text);
    });
    after(() => server.stop());

    const observation = (subject: string, performer?: string) => ({
      resourceType: 'Observation',
      status: 'final',
      code: { text: 'ref' },
      subject: { reference: subject },
      ...(performer ? { performer: [{ display: 'x' }, { reference: performer }] } : {}),
    });

    test('with the setting: a dangling reference → 400 naming reference and element; nothing stored', async () => {
      const token = checked.adminToken;
      const refused = await server.fhir('POST', '/Observation', { token, body: observation('Patient/does-not-exist') });
      assert.equal(refused.status, 400, refused.text);
      assert.deepEqual(refused.body.issue, [
        {
          severity: 'error',
          code: 'invalid',
          details: { text: "Reference 'Patient/does-not-exist' at Observation.subject points to no resource (the project checks references on write)" },
          expression: ['Observation.subject'],
        },
      ]);
      assert.equal((await server.fhir('GET', '/Observation?code:text=ref', { token })).body.total, 0);
      const patient = (await server.fhir('POST', '/Patient', { token, body: { resourceType: 'Patient' } })).body;
      const ok = await server.fhir('POST', '/Observation', { token, body: observation(`Patient/${patient.id}`) });
      assert.equal(ok.status, 201, ok.text);
      // Update: the second reference of an array, named with its index.
      const put = await server.fhir('PUT', `/Observation/${ok.body.id}`, { token, body: { ...ok.body, performer: [{ display: 'x' }, { reference: 'Practitioner/gone' }] } });
      assert.equal(put.status, 400, put.text);
      assert.equal(ooText(put.body), "Reference 'Practitioner/gone' at Observation.performer[1] points to no resource (the project checks references on write)");
      // Another project's resource is not there for this project.
      const foreign = (await server.fhir('POST', '/Patient', { token: open.adminToken, body: { resourceType: 'Patient' } })).body;
      assert.equal((await server.fhir('POST', '/Observation', { token, body: observation(`Patient/${foreign.id}`) })).status, 400);
      // A transaction creating the patient and the observation that references it holds.
      const tx = await server.fhir('POST', '', {
        token,
        body: {
          resourceType: 'Bundle',
          type: 'transaction',
          entry: [
            { fullUrl: 'urn:uuid:8a9e4a33-1c43-4a6b-9f0e-2a7f3c1d5e01', resource: { resourceType: 'Patient' }, request: { method: 'POST', url: 'Patient' } },
            { resource: observation('urn:uuid:8a9e4a33-1c43-4a6b-9f0e-2a7f3c1d5e01'), request: { method: 'POST', url: 'Observation' } },
          ],
        },
      });
      assert.equal(tx.status, 200, tx.text);
    });

    test('with the setting: deleting a referenced resource → 409 naming a referrer; once unreferenced it goes', async () => {
      const token = checked.adminToken;
      const patient = (await server.fhir('POST', '/Patient', { token, body: { resourceType: 'Patient' } })).body;
      const obs = (await server.fhir('POST', '/Observation', { token, body: observation(`Patient/${patient.id}`) })).body;
      const refused = await server.fhir('DELETE', `/Patient/${patient.id}`, { token });
      assert.equal(refused.status, 409, refused.text);
      assert.equal(refused.body.issue[0].code, 'conflict');
      assert.equal(ooText(refused.body), `Patient/${patient.id} is referenced by Observation/${obs.id} (search parameter patient); the project checks references on write, so it cannot be deleted`);
      assert.equal((await server.fhir('GET', `/Patient/${patient.id}`, { token })).status, 200);
      assert.equal((await server.fhir('DELETE', `/Observation/${obs.id}`, { token })).status, 200);
      assert.equal((await server.fhir('DELETE', `/Patient/${patient.id}`, { token })).status, 200);
    });

    test('without the setting: FHIR behaviour — dangling references are stored, referenced resources deleted', async () => {
      const token = open.adminToken;
      const dangling = await server.fhir('POST', '/Observation', { token, body: observation('Patient/does-not-exist') });
      assert.equal(dangling.status, 201, dangling.text);
      const patient = (await server.fhir('POST', '/Patient', { token, body: { resourceType: 'Patient' } })).body;
      await server.fhir('POST', '/Observation', { token, body: observation(`Patient/${patient.id}`) });
      assert.equal((await server.fhir('DELETE', `/Patient/${patient.id}`, { token })).status, 200);
    });

    test('a conditional reference in a plain create/update is resolved to its match: none → 400, several → 412', async () => {
      const token = open.adminToken;
      const system = 'http://clinic.example/mrn';
      const patient = (await server.fhir('POST', '/Patient', { token, body: { resourceType: 'Patient', identifier: [{ system, value: 'one' }] } })).body;
      const created = await server.fhir('POST', '/Observation', { token, body: observation(`Patient?identifier=${system}|one`) });
      assert.equal(created.status, 201, created.text);
      assert.equal(created.body.subject.reference, `Patient/${patient.id}`);
      assert.equal((await server.fhir('GET', `/Observation/${created.body.id}`, { token })).body.subject.reference, `Patient/${patient.id}`);
      const put = await server.fhir('PUT', `/Observation/${created.body.id}`, { token, body: { ...created.body, subject: { reference: `Patient?identifier=${system}|one` } } });
      assert.equal(put.status, 200, put.text);
      assert.equal(put.body.subject.reference, `Patient/${patient.id}`);
      const none = await server.fhir('POST', '/Observation', { token, body: observation(`Patient?identifier=${system}|nobody`) });
      assert.equal(none.status, 400);
      assert.equal(ooText(none.body), `conditional reference 'Patient?identifier=${system}|nobody' matches no resource`);
      await server.fhir('POST', '/Patient', { token, body: { resourceType: 'Patient', identifier: [{ system, value: 'twin' }] } });
      await server.fhir('POST', '/Patient', { token, body: { resourceType: 'Patient', identifier: [{ system, value: 'twin' }] } });
      const several = await server.fhir('POST', '/Observation', { token, body: observation(`Patient?identifier=${system}|twin`) });
      assert.equal(several.status, 412);
      assert.equal(ooText(several.body), `conditional reference 'Patient?identifier=${system}|twin' matches several resources`);
    });
  });
}
