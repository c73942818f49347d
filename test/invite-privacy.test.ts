import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createProject, drivers, startServer, type TestProject, type TestServer } from './harness.js';
import { invite, randomEmail } from './support/invite.js';

/**
 * The invite answer does not tell a project admin whether the e-mail already had an account in
 * another project (docs/invite.md#scopes). Before, the `user` reference of a new User was
 * readable by the inviting admin and that of an existing one was not: a probe for accounts.
 */
for (const driver of drivers) {
  describe(`invite privacy (${driver})`, () => {
    let server: TestServer;
    let a: TestProject;
    let b: TestProject;
    before(async () => {
      server = await startServer(driver);
      a = await createProject(server, 'Privacy A');
      b = await createProject(server, 'Privacy B');
    });
    after(() => server.stop());

    /** Everything B's admin can learn from an invite's answer and where its references lead. */
    async function seenByB(email: string) {
      const res = await invite(server, b.projectId, { resourceType: 'Practitioner', firstName: 'Pri', lastName: 'Vacy', email }, b.adminToken);
      assert.equal(res.status, 200, res.text);
      const read = async (path: string) => (await server.fhir('GET', path, { token: b.adminToken })).status;
      const userRef = res.body.user.reference as string;
      const memberships = await server.fhir('GET', `/ProjectMembership?user=${userRef}`, { token: b.adminToken });
      const users = await server.fhir('GET', `/User?email=${encodeURIComponent(email)}`, { token: b.adminToken });
      return {
        keys: Object.keys(res.body).sort(),
        userKeys: Object.keys(res.body.user).sort(),
        userDisplay: res.body.user.display === email,
        readUser: await read(`/${userRef}`),
        userHistory: await read(`/${userRef}/_history`),
        usersFound: users.body.total,
        membershipsFound: memberships.body.total,
      };
    }

    test('an e-mail with an account in another project looks exactly like a new one', async () => {
      const existing = randomEmail('elsewhere');
      const inA = await invite(server, a.projectId, { resourceType: 'Practitioner', firstName: 'Else', lastName: 'Where', email: existing }, a.adminToken);
      assert.equal(inA.status, 200, inA.text);
      const seenExisting = await seenByB(existing);
      const seenNew = await seenByB(randomEmail('brand-new'));
      assert.deepEqual(seenExisting, seenNew);
      assert.equal(seenNew.readUser, 404, 'server-scoped Users are server accounts: no project admin reads them');
      assert.equal(seenNew.membershipsFound, 1, 'the membership (with the e-mail as display) is what the project sees');
    });

    test('a project-scoped (Patient) user stays readable by its project admin', async () => {
      const res = await invite(server, b.projectId, { resourceType: 'Patient', firstName: 'Pat', lastName: 'Ient', email: randomEmail('patient') }, b.adminToken);
      assert.equal(res.status, 200, res.text);
      assert.equal((await server.fhir('GET', `/${res.body.user.reference}`, { token: b.adminToken })).status, 200);
    });

    test('super admins read every invited User', async () => {
      const res = await invite(server, b.projectId, { resourceType: 'Practitioner', firstName: 'Su', lastName: 'Per', email: randomEmail('super') }, b.adminToken);
      const user = await server.fhir('GET', `/${res.body.user.reference}`, { token: server.adminToken });
      assert.equal(user.status, 200, user.text);
      assert.equal(user.body.firstName, 'Su');
    });
  });
}
