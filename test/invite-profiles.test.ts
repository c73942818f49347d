import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { User } from '@medplum/fhirtypes';
import { createProject, drivers, ooText, startServer, type ApiResponse, type TestProject, type TestServer } from './harness.js';
import { invite as inviteAs, practitionerInvite, randomEmail } from './support/invite.js';

/** Invite and profiles: `membership.profile`, profile reuse by e-mail, RelatedPerson (docs/invite.md). */
for (const driver of drivers) {
  describe(`invite profiles (${driver})`, () => {
    let server: TestServer;
    let a: TestProject;
    let b: TestProject;
    before(async () => {
      server = await startServer(driver);
      a = await createProject(server, 'Profile Clinic');
      b = await createProject(server, 'Other Clinic');
    });
    after(() => server.stop());

    /** Invites as `token` (default: the super admin; `null`: no token). */
    const invite = (projectId: string, body: unknown, token?: string | null): Promise<ApiResponse> => inviteAs(server, projectId, body, token);
    const email = (): string => randomEmail();
    const practitioner = practitionerInvite;
    const asSuperAdmin = (path: string) => server.fhir('GET', path, { token: server.adminToken });

    test('membership.profile names an existing profile of the project', async () => {
      const created = await server.fhir('POST', '/Practitioner', { body: { resourceType: 'Practitioner', name: [{ given: ['Known'], family: 'Doc' }] }, token: a.adminToken });
      assert.equal(created.status, 201, created.text);
      const res = await invite(a.projectId, practitioner({ membership: { profile: { reference: `Practitioner/${created.body.id}` } } }), a.adminToken);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.profile, { reference: `Practitioner/${created.body.id}`, display: 'Known Doc' });
    });

    test('membership.profile of another type → 400 Profile resourceType does not match request', async () => {
      const patient = await server.fhir('POST', '/Patient', { body: { resourceType: 'Patient' }, token: a.adminToken });
      const res = await invite(a.projectId, practitioner({ membership: { profile: { reference: `Patient/${patient.body.id}` } } }), a.adminToken);
      assert.equal(res.status, 400);
      assert.equal(ooText(res.body), 'Profile resourceType does not match request');
      assert.deepEqual(res.body.issue[0].expression, ['membership.profile']);
    });

    test('membership.profile of another project → 400 Profile does not belong to project', async () => {
      const other = await server.fhir('POST', '/Practitioner', { body: { resourceType: 'Practitioner' }, token: b.adminToken });
      const res = await invite(a.projectId, practitioner({ membership: { profile: { reference: `Practitioner/${other.body.id}` } } }), a.adminToken);
      assert.equal(res.status, 400);
      assert.equal(ooText(res.body), 'Profile does not belong to project');
    });

    test('an existing profile with the e-mail is reused (names in the body are ignored)', async () => {
      const address = email();
      const created = await server.fhir('POST', '/Practitioner', {
        body: { resourceType: 'Practitioner', name: [{ given: ['Real'], family: 'Name' }], telecom: [{ system: 'email', value: address.toUpperCase() }] },
        token: a.adminToken,
      });
      const res = await invite(a.projectId, practitioner({ email: address, firstName: 'Other' }), a.adminToken);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.profile, { reference: `Practitioner/${created.body.id}`, display: 'Real Name' });
    });

    test('RelatedPerson needs a patient of the project; without one nothing is left behind', async () => {
      const address = email();
      const res = await invite(a.projectId, { resourceType: 'RelatedPerson', firstName: 'Rel', lastName: 'Ative', email: address }, a.adminToken);
      assert.equal(res.status, 400);
      assert.equal(ooText(res.body), 'Patient is required to create a RelatedPerson');
      assert.deepEqual(res.body.issue[0].expression, ['patient']);
      const users = (await asSuperAdmin('/User?_count=1000')).body.entry ?? [];
      assert.equal(users.filter((e: { resource: User }) => e.resource.email === address).length, 0, 'the User of the failed invite was rolled back');

      const patient = await server.fhir('POST', '/Patient', { body: { resourceType: 'Patient' }, token: a.adminToken });
      const ok = await invite(
        a.projectId,
        { resourceType: 'RelatedPerson', firstName: 'Rel', lastName: 'Ative', email: address, patient: { reference: `Patient/${patient.body.id}` } },
        a.adminToken,
      );
      assert.equal(ok.status, 200, ok.text);
      const profile = await asSuperAdmin(`/${ok.body.profile.reference}`);
      assert.equal(profile.body.patient.reference, `Patient/${patient.body.id}`);
    });

    test('RelatedPerson with a patient of another project → 400 Patient does not belong to project', async () => {
      const foreign = await server.fhir('POST', '/Patient', { body: { resourceType: 'Patient' }, token: b.adminToken });
      const res = await invite(
        a.projectId,
        { resourceType: 'RelatedPerson', firstName: 'Rel', lastName: 'Foreign', email: email(), patient: { reference: `Patient/${foreign.body.id}` } },
        a.adminToken,
      );
      assert.equal(res.status, 400);
      assert.equal(ooText(res.body), 'Patient does not belong to project');
      assert.deepEqual(res.body.issue[0].expression, ['patient']);
    });
  });
}
