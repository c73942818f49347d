import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { MedplumClient, OperationOutcomeError } from '@medplum/core';
import { createProject, drivers, loginAs, startServer, type TestProject, type TestServer } from './harness.js';

/** A real client: `MedplumClient.invite` from @medplum/core 4.x against Lattice. */
for (const driver of drivers) {
  describe(`MedplumClient.invite (${driver})`, () => {
    let server: TestServer;
    let project: TestProject;
    let medplum: MedplumClient;
    before(async () => {
      server = await startServer(driver);
      project = await createProject(server, 'Medplum Invites');
      medplum = new MedplumClient({ baseUrl: `${server.baseUrl}/`, fetch, storage: undefined });
      medplum.setAccessToken(project.adminToken);
    });
    after(() => server.stop());

    test('invite returns the ProjectMembership; the invited user can log in', async () => {
      const email = `medplum-${randomBytes(5).toString('hex')}@example.org`;
      const result = await medplum.invite(project.projectId, {
        resourceType: 'Practitioner',
        firstName: 'Core',
        lastName: 'Client',
        email,
        password: 'medplum core password',
        membership: { admin: true },
      });
      assert.equal(result.resourceType, 'ProjectMembership');
      if (result.resourceType !== 'ProjectMembership') return;
      assert.equal(result.admin, true);
      assert.equal(result.project?.reference, `Project/${project.projectId}`);
      assert.equal(result.project?.display, 'Medplum Invites');
      assert.equal(result.user?.display, email);
      assert.equal(result.profile?.display, 'Core Client');
      assert.ok(await loginAs(server, email, 'medplum core password', project.projectId));
    });

    test('a second identical invite rejects with the 409 OperationOutcome', async () => {
      const body = { resourceType: 'Patient' as const, firstName: 'Twice', lastName: 'Invited', email: `twice-${randomBytes(5).toString('hex')}@example.org` };
      await medplum.invite(project.projectId, body);
      await assert.rejects(medplum.invite(project.projectId, body), (err: unknown) => {
        assert.ok(err instanceof OperationOutcomeError);
        assert.equal(err.outcome.issue?.[0]?.code, 'conflict');
        assert.equal(err.outcome.issue?.[0]?.details?.text, 'User is already a member of this project');
        return true;
      });
    });
  });
}
