import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createProject, drivers, ooText, startServer, type TestProject, type TestServer } from './harness.js';
import { makeProfile } from './support/profiles.js';

/** `Project.validateProfilesOnWrite` (docs/rest.md#validate): writes refuse a resource failing its meta.profile. */
const PROFILE = 'http://example.org/fhir/StructureDefinition/write-needs-birthdate';
const MISSING = "error Patient.birthDate: birthDate: minimum required = 1, but only found 0";

for (const driver of drivers) {
  describe(`profiles on write (${driver})`, () => {
    let server: TestServer;
    let strict: TestProject;
    let lax: TestProject;
    const brief = (body: { issue?: Array<{ severity: string; expression?: string[]; details?: { text?: string } }> }) =>
      (body.issue ?? []).map((i) => `${i.severity} ${i.expression?.[0]}: ${i.details?.text}`);
    const setProject = async (p: TestProject, settings: Record<string, unknown>) => {
      const res = await server.fhir('PUT', `/Project/${p.projectId}`, { token: server.adminToken, body: { ...p.project, ...settings } });
      assert.equal(res.status, 200, res.text);
    };

    before(async () => {
      server = await startServer(driver);
      strict = await createProject(server, 'Strict profiles');
      lax = await createProject(server, 'Lax profiles');
      await setProject(strict, { validateProfilesOnWrite: true });
      for (const p of [strict, lax]) {
        const held = await server.fhir('POST', '/StructureDefinition', { token: p.adminToken, body: makeProfile('Patient', PROFILE, { constrain: { 'Patient.birthDate': { min: 1 } } }) });
        assert.equal(held.status, 201, held.text);
      }
    });
    after(() => server.stop());

    test('setting on: a create failing its meta.profile → 422 with the OperationOutcome; nothing stored', async () => {
      const res = await server.fhir('POST', '/Patient', { token: strict.adminToken, body: { resourceType: 'Patient', meta: { profile: [PROFILE] }, name: [{ family: 'Refused' }] } });
      assert.equal(res.status, 422, res.text);
      assert.deepEqual(brief(res.body), [MISSING]);
      const search = await server.fhir('GET', '/Patient?family=Refused', { token: strict.adminToken });
      assert.equal(search.body.total ?? search.body.entry?.length ?? 0, 0);
    });

    test('setting on: a conforming create → 201; update and PATCH that break it → 422', async () => {
      const created = await server.fhir('POST', '/Patient', { token: strict.adminToken, body: { resourceType: 'Patient', meta: { profile: [PROFILE] }, birthDate: '1990-01-01' } });
      assert.equal(created.status, 201, created.text);
      const { birthDate: _gone, ...without } = created.body;
      const put = await server.fhir('PUT', `/Patient/${created.body.id}`, { token: strict.adminToken, body: without });
      assert.equal(put.status, 422, put.text);
      assert.deepEqual(brief(put.body), [MISSING]);
      const patch = await server.fhir('PATCH', `/Patient/${created.body.id}`, {
        token: strict.adminToken,
        raw: JSON.stringify([{ op: 'remove', path: '/birthDate' }]),
        contentType: 'application/json-patch+json',
      });
      assert.equal(patch.status, 422, patch.text);
      assert.deepEqual(brief(patch.body), [MISSING]);
    });

    test('setting on: a warning of the base rules (its Questionnaire not found) does not let a failing profile through', async () => {
      const qrProfile = 'http://example.org/fhir/StructureDefinition/write-qr-needs-author';
      const held = await server.fhir('POST', '/StructureDefinition', {
        token: strict.adminToken,
        body: makeProfile('QuestionnaireResponse', qrProfile, { constrain: { 'QuestionnaireResponse.author': { min: 1 } } }),
      });
      assert.equal(held.status, 201, held.text);
      const res = await server.fhir('POST', '/QuestionnaireResponse', {
        token: strict.adminToken,
        body: { resourceType: 'QuestionnaireResponse', meta: { profile: [qrProfile] }, status: 'completed', questionnaire: 'http://example.org/fhir/Questionnaire/not-held' },
      });
      assert.equal(res.status, 422, res.text);
      assert.deepEqual(brief(res.body), ['error QuestionnaireResponse.author: author: minimum required = 1, but only found 0']);
    });

    test('setting on: a meta.profile the server does not hold → 422; with allowUnknownProfiles → 201', async () => {
      const unknown = 'http://example.org/fhir/StructureDefinition/not-held';
      const body = { resourceType: 'Patient', meta: { profile: [unknown] } };
      const refused = await server.fhir('POST', '/Patient', { token: strict.adminToken, body });
      assert.equal(refused.status, 422, refused.text);
      assert.deepEqual(brief(refused.body), [`error Patient.meta.profile[0]: Profile '${unknown}' is not known to this server: the resource was not checked against it`]);
      const project = (await server.fhir('GET', `/Project/${strict.projectId}`, { token: server.adminToken })).body;
      await setProject({ ...strict, project }, { allowUnknownProfiles: true });
      const allowed = await server.fhir('POST', '/Patient', { token: strict.adminToken, body });
      assert.equal(allowed.status, 201, allowed.text);
      const latest = (await server.fhir('GET', `/Project/${strict.projectId}`, { token: server.adminToken })).body;
      await setProject({ ...strict, project: latest }, { allowUnknownProfiles: false });
    });

    test('setting on: a transaction with a failing entry fails whole (422); nothing stored', async () => {
      const bundle = {
        resourceType: 'Bundle',
        type: 'transaction',
        entry: [
          { resource: { resourceType: 'Patient', name: [{ family: 'TxOk' }] }, request: { method: 'POST', url: 'Patient' } },
          { resource: { resourceType: 'Patient', meta: { profile: [PROFILE] }, name: [{ family: 'TxBad' }] }, request: { method: 'POST', url: 'Patient' } },
        ],
      };
      const res = await server.fhir('POST', '/', { token: strict.adminToken, body: bundle });
      assert.equal(res.status, 422, res.text);
      assert.equal(ooText(res.body), 'Bundle.entry[1]: birthDate: minimum required = 1, but only found 0');
      const search = await server.fhir('GET', '/Patient?family=TxOk', { token: strict.adminToken });
      assert.equal(search.body.entry?.length ?? 0, 0);
    });

    test('setting on: base invariants are enforced on write too', async () => {
      const res = await server.fhir('POST', '/Observation', {
        token: strict.adminToken,
        body: { resourceType: 'Observation', status: 'final', code: { text: 'x' }, valueString: 'a', dataAbsentReason: { text: 'none' } },
      });
      assert.equal(res.status, 422, res.text);
      assert.match(ooText(res.body) ?? '', /^Constraint obs-6 is not met/);
    });

    test('setting off: the same failing create → 201 and the claim is stored as sent', async () => {
      const res = await server.fhir('POST', '/Patient', { token: lax.adminToken, body: { resourceType: 'Patient', meta: { profile: [PROFILE] } } });
      assert.equal(res.status, 201, res.text);
      assert.deepEqual(res.body.meta.profile, [PROFILE]);
      const obs = await server.fhir('POST', '/Observation', {
        token: lax.adminToken,
        body: { resourceType: 'Observation', status: 'final', code: { text: 'x' }, valueString: 'a', dataAbsentReason: { text: 'none' } },
      });
      assert.equal(obs.status, 201, obs.text);
    });
  });
}
