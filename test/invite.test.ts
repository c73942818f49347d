import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { OperationOutcomeIssue, User } from '@medplum/fhirtypes';
import {
  createMember,
  createProject,
  drivers,
  loginAs,
  ooText,
  startServer,
  type ApiResponse,
  type TestProject,
  type TestServer,
} from './harness.js';
import { invite as inviteAs, practitionerInvite, randomEmail } from './support/invite.js';

/** `POST /admin/projects/<id>/invite` over HTTP: access, validation and results (docs/invite.md). */
for (const driver of drivers) {
  describe(`invite (${driver})`, () => {
    let server: TestServer;
    let a: TestProject;
    let b: TestProject;
    before(async () => {
      server = await startServer(driver);
      a = await createProject(server, 'Alpha Clinic');
      b = await createProject(server, 'Beta Clinic');
    });
    after(() => server.stop());

    /** Invites as `token` (default: the super admin; `null`: no token). */
    const invite = (projectId: string, body: unknown, token?: string | null): Promise<ApiResponse> => inviteAs(server, projectId, body, token);
    const email = (): string => randomEmail();
    const practitioner = practitionerInvite;
    const asSuperAdmin = (path: string) => server.fhir('GET', path, { token: server.adminToken });

    describe('access (checked before the body)', () => {
      test('no token → 401 Unauthorized with WWW-Authenticate', async () => {
        const res = await invite(a.projectId, {}, null);
        assert.equal(res.status, 401);
        assert.equal(ooText(res.body), 'Unauthorized');
        assert.equal(res.body.issue[0].code, 'login');
        assert.equal(res.headers.get('www-authenticate'), 'Bearer');
      });

      test('invalid token → 401', async () => {
        const res = await invite(a.projectId, practitioner(), 'not-a-token');
        assert.equal(res.status, 401);
        assert.equal(ooText(res.body), 'Unauthorized');
      });

      test('a member who is not an admin → 403 Forbidden', async () => {
        const member = await createMember(server, a.projectId);
        const res = await invite(a.projectId, practitioner(), member.token);
        assert.equal(res.status, 403);
        assert.equal(res.body.issue[0].code, 'forbidden');
        assert.equal(ooText(res.body), 'Forbidden');
      });

      test('the admin of A posting to B → 403', async () => {
        const res = await invite(b.projectId, practitioner(), a.adminToken);
        assert.equal(res.status, 403);
        assert.equal(ooText(res.body), 'Forbidden');
      });

      test('the admin of A posting to an unknown project → 403 (not 404)', async () => {
        const res = await invite(randomUUID(), practitioner(), a.adminToken);
        assert.equal(res.status, 403);
      });

      test('super admin, unknown project → 404 Not found (before body validation)', async () => {
        const res = await invite(randomUUID(), {});
        assert.equal(res.status, 404);
        assert.equal(res.body.issue[0].code, 'not-found');
        assert.equal(ooText(res.body), 'Not found');
      });

      test('a non-admin with an invalid body still gets 403, not 400', async () => {
        const member = await createMember(server, a.projectId);
        assert.equal((await invite(a.projectId, {}, member.token)).status, 403);
      });
    });

    describe('validation: one 400 with every problem, in order, with expressions', () => {
      test('empty body', async () => {
        const res = await invite(a.projectId, {}, a.adminToken);
        assert.equal(res.status, 400);
        assert.equal(res.headers.get('content-type'), 'application/fhir+json; charset=utf-8');
        assert.deepEqual(
          res.body.issue.map((i: OperationOutcomeIssue) => [i.severity, i.code, i.details?.text, i.expression?.[0]]),
          [
            ['error', 'invalid', 'Resource type is required', 'resourceType'],
            ['error', 'invalid', 'First name is required', 'firstName'],
            ['error', 'invalid', 'Last name is required', 'lastName'],
            ['error', 'invalid', 'Either email or externalId is required', 'email'],
          ],
        );
      });

      test('wrong resourceType, bad email and short password together', async () => {
        const res = await invite(
          a.projectId,
          { resourceType: 'Device', firstName: 'A', lastName: 'B', email: 'not-an-email', password: 'short' },
          a.adminToken,
        );
        assert.equal(res.status, 400);
        assert.deepEqual(
          res.body.issue.map((i: OperationOutcomeIssue) => [i.details?.text, i.expression]),
          [
            ['Resource type is required', ['resourceType']],
            ['Invalid email', ['email']],
            ['Password must be at least 8 characters', ['password']],
          ],
        );
      });

      test('blank names count as missing', async () => {
        const res = await invite(a.projectId, practitioner({ firstName: '  ', lastName: '' }), a.adminToken);
        assert.deepEqual(res.body.issue.map((i: OperationOutcomeIssue) => ooTextOf(i)), ['First name is required', 'Last name is required']);
      });

      test('an invalid membership override is reported with its path', async () => {
        const res = await invite(a.projectId, practitioner({ membership: { admin: 'yes' } }), a.adminToken);
        assert.equal(res.status, 400);
        assert.equal(res.body.issue[0].expression[0], 'membership.admin');
      });
    });

    describe('results', () => {
      test('project admin invites a new practitioner: 200 ProjectMembership with displays', async () => {
        const res = await invite(a.projectId, practitioner({ email: '  Grace.Hopper@Example.ORG ', firstName: 'Grace', lastName: 'Hopper' }), a.adminToken);
        assert.equal(res.status, 200, res.text);
        assert.equal(res.headers.get('content-type'), 'application/fhir+json; charset=utf-8');
        const m = res.body;
        assert.equal(m.resourceType, 'ProjectMembership');
        assert.equal(typeof m.id, 'string');
        assert.deepEqual(m.project, { reference: `Project/${a.projectId}`, display: 'Alpha Clinic' });
        assert.match(m.user.reference, /^User\/[\w-]+$/);
        assert.equal(m.user.display, 'grace.hopper@example.org');
        assert.match(m.profile.reference, /^Practitioner\/[\w-]+$/);
        assert.equal(m.profile.display, 'Grace Hopper');

        const user = await asSuperAdmin(`/${m.user.reference}`);
        assert.equal(user.body.email, 'grace.hopper@example.org');
        assert.equal(user.body.project, undefined, 'a practitioner is a server-scoped user');
        assert.equal(user.body.passwordHash, undefined);
        const profile = await asSuperAdmin(`/${m.profile.reference}`);
        assert.deepEqual(profile.body.name, [{ given: ['Grace'], family: 'Hopper' }]);
        assert.deepEqual(profile.body.telecom, [{ system: 'email', value: 'grace.hopper@example.org' }]);
        assert.equal(profile.body.meta.project, a.projectId);
        const stored = await asSuperAdmin(`/ProjectMembership/${m.id}`);
        assert.equal(stored.status, 200);
      });

      test('the super admin invites into another project', async () => {
        const res = await invite(b.projectId, practitioner());
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.project.reference, `Project/${b.projectId}`);
        assert.equal(res.body.project.display, 'Beta Clinic');
      });

      test('membership overrides apply; project/user/profile cannot be overridden', async () => {
        const res = await invite(
          a.projectId,
          practitioner({ membership: { admin: true, project: { reference: `Project/${b.projectId}` }, user: { reference: 'User/x' } } }),
          a.adminToken,
        );
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.admin, true);
        assert.equal(res.body.project.reference, `Project/${a.projectId}`);
        assert.notEqual(res.body.user.reference, 'User/x');
      });

      test('a password given at invite lets the user log in right away', async () => {
        const body = practitioner({ password: 'correct horse battery' });
        assert.equal((await invite(a.projectId, body, a.adminToken)).status, 200);
        const token = await loginAs(server, body.email, 'correct horse battery', a.projectId);
        const me = await server.fhir('GET', '/Patient', { token });
        assert.equal(me.status, 200);
      });

      test('the same invite twice → 409 User is already a member of this project', async () => {
        const body = practitioner();
        assert.equal((await invite(a.projectId, body, a.adminToken)).status, 200);
        const again = await invite(a.projectId, { ...body, email: body.email.toUpperCase() }, a.adminToken);
        assert.equal(again.status, 409);
        assert.equal(again.body.issue[0].code, 'conflict');
        assert.equal(ooText(again.body), 'User is already a member of this project');
      });

      test('upsert: same membership id, updated', async () => {
        const body = practitioner();
        const first = await invite(a.projectId, body, a.adminToken);
        const second = await invite(a.projectId, { ...body, upsert: true, membership: { admin: true } }, a.adminToken);
        assert.equal(second.status, 200, second.text);
        assert.equal(second.body.id, first.body.id);
        assert.equal(second.body.admin, true);
        assert.equal(second.body.profile.reference, first.body.profile.reference);
        const stored = await asSuperAdmin(`/ProjectMembership/${first.body.id}`);
        assert.equal(stored.body.admin, true);
        assert.equal(stored.body.meta.versionId, '2');
      });

      test('upsert naming another profile → 409 … with a different profile', async () => {
        const body = practitioner();
        await invite(a.projectId, body, a.adminToken);
        const other = await invite(a.projectId, practitioner(), a.adminToken);
        const res = await invite(a.projectId, { ...body, upsert: true, membership: { profile: other.body.profile } }, a.adminToken);
        assert.equal(res.status, 409);
        assert.equal(ooText(res.body), 'User is already a member of this project with a different profile');
      });

      test('upsert taking an external id another member holds → 409 External ID already exists in this project', async () => {
        const externalId = `ext-${randomUUID()}`;
        await invite(a.projectId, practitioner({ externalId }), a.adminToken);
        const body = { resourceType: 'Patient', firstName: 'Up', lastName: 'Sert', email: email() }; // project-scoped, as with externalId
        assert.equal((await invite(a.projectId, body, a.adminToken)).status, 200);
        const res = await invite(a.projectId, { ...body, externalId, upsert: true }, a.adminToken);
        assert.equal(res.status, 409);
        assert.equal(ooText(res.body), 'External ID already exists in this project');
      });

      test('upsert by externalId alone updates that membership', async () => {
        const externalId = `ext-${randomUUID()}`;
        const body = { resourceType: 'Patient', firstName: 'Ex', lastName: 'Ternal', externalId };
        const first = await invite(a.projectId, body, a.adminToken);
        assert.equal(first.status, 200, first.text);
        const second = await invite(a.projectId, { ...body, upsert: true, membership: { active: false } }, a.adminToken);
        assert.equal(second.status, 200, second.text);
        assert.equal(second.body.id, first.body.id);
        assert.equal(second.body.active, false);
        assert.equal(second.body.externalId, externalId);
      });

      test('the same externalId twice in a project → 409 External ID already exists in this project', async () => {
        const externalId = `ext-${randomUUID()}`;
        assert.equal((await invite(a.projectId, practitioner({ externalId }), a.adminToken)).status, 200);
        const sameWithOtherEmail = await invite(a.projectId, practitioner({ externalId }), a.adminToken);
        assert.equal(sameWithOtherEmail.status, 409);
        assert.equal(ooText(sameWithOtherEmail.body), 'External ID already exists in this project');
        const noEmail = await invite(a.projectId, practitioner({ externalId, email: undefined }), a.adminToken);
        assert.equal(noEmail.status, 409);
        assert.equal(ooText(noEmail.body), 'External ID already exists in this project');
        // Another project may use the same external id.
        assert.equal((await invite(b.projectId, practitioner({ externalId }))).status, 200);
      });

      test('an existing user invited to a second project: one User, two memberships', async () => {
        const body = practitioner();
        const inA = await invite(a.projectId, body, a.adminToken);
        const inB = await invite(b.projectId, body, b.adminToken);
        assert.equal(inB.status, 200, inB.text);
        assert.equal(inB.body.user.reference, inA.body.user.reference);
        assert.notEqual(inB.body.id, inA.body.id);
        assert.notEqual(inB.body.profile.reference, inA.body.profile.reference, 'profiles live in their project');
        const users = (await asSuperAdmin('/User?_count=1000')).body.entry.filter((e: { resource: User }) => e.resource.email === body.email);
        assert.equal(users.length, 1);
      });

      test('a Patient is a project-scoped user; the same e-mail cannot then join as a server-scoped user', async () => {
        const address = email();
        const patient = await invite(a.projectId, { resourceType: 'Patient', firstName: 'Pat', lastName: 'Ient', email: address }, a.adminToken);
        assert.equal(patient.status, 200, patient.text);
        const user = await asSuperAdmin(`/${patient.body.user.reference}`);
        assert.equal(user.body.project.reference, `Project/${a.projectId}`);
        const res = await invite(a.projectId, practitioner({ email: address }), a.adminToken);
        assert.equal(res.status, 409);
        assert.equal(ooText(res.body), 'User is already a member of this project');
      });
    });
  });
}

function ooTextOf(issue: OperationOutcomeIssue | undefined): string | undefined {
  return issue?.details?.text;
}
