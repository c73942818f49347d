import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Practitioner } from '@medplum/fhirtypes';
import {
  createClient,
  createMember,
  createProject,
  drivers,
  loginTokens,
  ooText,
  startServer,
  type ApiResponse,
  type TestMember,
  type TestProject,
  type TestServer,
} from './harness.js';

/**
 * Members managed by a project's admins (docs/auth.md#managing-members, issue 25 item 4): list,
 * read, change (admin flag, profile, access policy), remove (the member's tokens stop at their
 * next request), resend the invite — under `/admin/projects/<projectId>/members/…`, and REST
 * `DELETE ProjectMembership/<id>` by that project's admin (contract case #135). Never across
 * projects: another project's admin gets 403 on the admin routes and 404 on REST.
 */

function assertOutcome(res: ApiResponse, status: number, text: string, expression?: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body?.resourceType, 'OperationOutcome', res.text);
  assert.equal(ooText(res.body), text, res.text);
  if (expression !== undefined) assert.deepEqual(res.body.issue[0].expression, [expression], res.text);
}

for (const driver of drivers) {
  describe(`members (${driver})`, () => {
    let server: TestServer;
    let p: TestProject;
    let other: TestProject;

    before(async () => {
      server = await startServer(driver);
      p = await createProject(server, 'Members');
      other = await createProject(server, 'Elsewhere');
    });
    after(() => server.stop());

    const path = (suffix = '', projectId = p.projectId) => `/admin/projects/${projectId}/members${suffix}`;
    const call = (method: string, url: string, token: string | null | undefined, body?: unknown) =>
      server.request(method, url, { token, body, contentType: body === undefined ? undefined : 'application/json' });
    const read = async (membershipId: string) => {
      const res = await call('GET', path(`/${membershipId}`), p.adminToken);
      assert.equal(res.status, 200, res.text);
      return res.body;
    };
    const update = (membershipId: string, body: unknown, token: string = p.adminToken) => call('POST', path(`/${membershipId}`), token, body);
    /** A Practitioner of a project, made as the system. */
    const practitioner = async (projectId: string, family: string) =>
      (await server.app.system.create<Practitioner>({ resourceType: 'Practitioner', name: [{ given: ['Pat'], family }], meta: { project: projectId } })).id!;
    /** An AccessPolicy stored in a project (written as a row: enforcing and serving policies is the scope work). */
    const accessPolicy = async (projectId: string) => {
      const id = randomUUID();
      const content = JSON.stringify({ resourceType: 'AccessPolicy', id, name: 'Read-only', meta: { versionId: '1', project: projectId } });
      await server.app.db.query(
        `INSERT INTO resource (resource_type, id, version_id, project_id, last_updated, deleted, content)
         VALUES ('AccessPolicy', $1, 1, $2, now(), false, $3)`,
        [id, projectId, content],
      );
      return id;
    };

    test('the list: a searchset Bundle of the project’s memberships only, paged', async () => {
      const member = await createMember(server, p.projectId);
      const res = await call('GET', path(), p.adminToken);
      assert.equal(res.status, 200, res.text);
      assert.match(res.headers.get('content-type') ?? '', /application\/fhir\+json/);
      assert.equal(res.body.resourceType, 'Bundle');
      assert.equal(res.body.type, 'searchset');
      const ids: string[] = res.body.entry.map((e: { resource: { id: string } }) => e.resource.id);
      assert.ok(ids.includes(member.membershipId) && ids.includes(p.admin.membershipId), res.text);
      assert.ok(!ids.includes(other.admin.membershipId), 'another project’s member is listed');
      assert.equal(res.body.total, ids.length);
      for (const e of res.body.entry) {
        assert.equal(e.resource.resourceType, 'ProjectMembership');
        assert.equal(e.resource.project.reference, `Project/${p.projectId}`);
      }
      // The super admin lists it too; pages follow `_count`/`_offset`.
      const first = await call('GET', path('?_count=1'), server.adminToken);
      assert.equal(first.status, 200, first.text);
      assert.deepEqual(first.body.entry.map((e: { resource: { id: string } }) => e.resource.id), [[...ids].sort()[0]]);
      const next = first.body.link.find((l: { relation: string }) => l.relation === 'next')?.url as string;
      assert.ok(next?.endsWith('_count=1&_offset=1'), first.text);
      const second = await call('GET', next.slice(server.baseUrl.length), server.adminToken);
      assert.deepEqual(second.body.entry.map((e: { resource: { id: string } }) => e.resource.id), [[...ids].sort()[1]]);
      assertOutcome(await call('GET', path('?_count=many'), p.adminToken), 400, '_count must be a non-negative integer', '_count');
      assertOutcome(await call('GET', path('?_offset=-1'), p.adminToken), 400, '_offset must be a non-negative integer', '_offset');
    });

    test('every route for every role: 401 without a token, 403 for members, clients and other projects’ admins', async () => {
      const target = await createMember(server, p.projectId);
      const memberToken = (await createMember(server, p.projectId)).token;
      const clientToken = (await createClient(server, p.projectId, { token: p.adminToken })).token;
      const routes: Array<[string, string, unknown?]> = [
        ['GET', path()],
        ['GET', path(`/${target.membershipId}`)],
        ['POST', path(`/${target.membershipId}`), { resourceType: 'ProjectMembership', admin: true }],
        ['POST', path(`/${target.membershipId}/resend`), {}],
        ['DELETE', path(`/${target.membershipId}`)],
      ];
      for (const [method, url, body] of routes) {
        const where = `${method} ${url}`;
        const none = await call(method, url, null, body);
        assert.equal(none.status, 401, `${where}: ${none.text}`);
        for (const [role, token] of [['member', memberToken], ['client', clientToken], ['other admin', other.adminToken]] as const) {
          const res = await call(method, url, token, body);
          assert.equal(res.status, 403, `${role} ${where}: ${res.text}`);
          assert.equal(ooText(res.body), 'Forbidden');
        }
        // Another project's admin naming its own project gets "not found" for A's membership.
        if (url !== path()) {
          const own = await call(method, url.replace(p.projectId, other.projectId), other.adminToken, body);
          assertOutcome(own, 404, 'Not found');
        }
        // A super admin naming an unknown project: 404.
        assertOutcome(await call(method, url.replace(p.projectId, 'no-such-project'), server.adminToken, body), 404, 'Not found');
      }
      // Nothing changed: the target is still a plain member.
      const stored = await read(target.membershipId);
      assert.equal(stored.admin, false);
      // The project admin and the super admin get through every route.
      assert.equal((await call('GET', path(), p.adminToken)).status, 200);
      assert.equal((await call('GET', path(`/${target.membershipId}`), server.adminToken)).status, 200);
      assert.equal((await update(target.membershipId, { ...stored, admin: true }, server.adminToken)).status, 200);
      assert.equal((await update(target.membershipId, { ...stored, admin: false })).status, 200);
      assert.equal((await call('POST', path(`/${target.membershipId}/resend`), server.adminToken, {})).status, 200);
      assert.equal((await call('DELETE', path(`/${target.membershipId}`), p.adminToken)).status, 200);
    });

    test('read: the membership; one of another project (or unknown) is 404 Not found', async () => {
      const member = await createMember(server, p.projectId);
      const body = await read(member.membershipId);
      assert.equal(body.resourceType, 'ProjectMembership');
      assert.equal(body.id, member.membershipId);
      assert.equal(body.profile.reference, member.profile);
      assertOutcome(await call('GET', path(`/${other.admin.membershipId}`), p.adminToken), 404, 'Not found');
      assertOutcome(await call('GET', path(`/${other.admin.membershipId}`), server.adminToken), 404, 'Not found');
      assertOutcome(await call('GET', path('/no-such-membership'), p.adminToken), 404, 'Not found');
    });

    test('promoting a member: its next login is an admin’s; demoting: the admin’s old token gets 401', async () => {
      const member = await createMember(server, p.projectId);
      const promoted = await update(member.membershipId, { ...(await read(member.membershipId)), admin: true });
      assert.equal(promoted.status, 200, promoted.text);
      assert.equal(promoted.body.admin, true);
      assert.equal(promoted.body.resourceType, 'ProjectMembership');
      const adminToken = (await loginTokens(server, member.email, member.password, { projectId: p.projectId })).access_token;
      assert.equal((await call('GET', path(), adminToken)).status, 200);
      const demoted = await update(member.membershipId, { ...(await read(member.membershipId)), admin: false });
      assert.equal(demoted.status, 200, demoted.text);
      assertOutcome(await call('GET', path(), adminToken), 401, 'Unauthorized');
    });

    test('a new profile: stored with its display; the member’s old token gets 401 (it speaks for the old profile)', async () => {
      const member = await createMember(server, p.projectId);
      const newProfile = await practitioner(p.projectId, 'Newname');
      const res = await update(member.membershipId, { ...(await read(member.membershipId)), profile: { reference: `Practitioner/${newProfile}` } });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.profile, { reference: `Practitioner/${newProfile}`, display: 'Pat Newname' });
      assertOutcome(await server.fhir('GET', '/Patient', { token: member.token }), 401, 'Unauthorized');
      const fresh = (await loginTokens(server, member.email, member.password, { projectId: p.projectId })).access_token;
      const me = await server.request('GET', '/auth/me', { token: fresh });
      assert.equal(me.body.profile.id, newProfile, me.text);
    });

    test('an access policy: set to one of the project’s, cleared by leaving it out', async () => {
      const member = await createMember(server, p.projectId);
      const policy = await accessPolicy(p.projectId);
      const stored = await read(member.membershipId);
      const set = await update(member.membershipId, { ...stored, accessPolicy: { reference: `AccessPolicy/${policy}` } });
      assert.equal(set.status, 200, set.text);
      assert.deepEqual(set.body.accessPolicy, { reference: `AccessPolicy/${policy}` });
      assert.deepEqual((await read(member.membershipId)).accessPolicy, { reference: `AccessPolicy/${policy}` });
      const { accessPolicy: _dropped, ...without } = set.body;
      const cleared = await update(member.membershipId, without);
      assert.equal(cleared.status, 200, cleared.text);
      assert.equal(cleared.body.accessPolicy, undefined);
    });

    test('changes that are refused, each with its text (and nothing is written)', async () => {
      const member = await createMember(server, p.projectId);
      const client = await createClient(server, p.projectId, { token: p.adminToken });
      const clientMembership = (await call('GET', path(), p.adminToken)).body.entry
        .map((e: { resource: { id: string; user: { reference: string } } }) => e.resource)
        .find((m: { user: { reference: string } }) => m.user.reference === `ClientApplication/${client.clientId}`);
      const stored = await read(member.membershipId);
      const otherPolicy = await accessPolicy(other.projectId);
      const otherProfile = await practitioner(other.projectId, 'Elsewhere');
      const cases: Array<[unknown, string, string?]> = [
        [[], 'Expected a ProjectMembership resource', 'resourceType'],
        [{ ...stored, resourceType: 'Patient' }, 'Expected a ProjectMembership resource', 'resourceType'],
        [{ ...stored, id: 'another-id' }, 'Resource ID does not match URL', 'ProjectMembership.id'],
        [{ ...stored, project: { reference: `Project/${other.projectId}` } }, 'A membership cannot move to another project', 'ProjectMembership.project'],
        [{ ...stored, user: { reference: `User/${p.admin.userId}` } }, "A membership's user cannot be changed", 'ProjectMembership.user'],
        [{ ...stored, profile: { reference: 'not a reference' } }, 'Invalid profile reference', 'ProjectMembership.profile'],
        [{ ...stored, profile: { reference: `Observation/${randomUUID()}` } }, 'Profile must be a Patient, Practitioner or RelatedPerson', 'ProjectMembership.profile'],
        [{ ...stored, profile: { reference: `Practitioner/${otherProfile}` } }, 'Profile does not belong to project', 'ProjectMembership.profile'],
        [{ ...stored, accessPolicy: { reference: `AccessPolicy/${otherPolicy}` } }, 'Access policy does not belong to project', 'ProjectMembership.accessPolicy'],
        [{ ...stored, accessPolicy: { reference: `Patient/${randomUUID()}` } }, 'Invalid access policy reference', 'ProjectMembership.accessPolicy'],
        [{ ...stored, admin: 'yes' }, undefined as unknown as string],
        [{ ...stored, superAdmin: true }, undefined as unknown as string],
      ];
      for (const [body, text, expression] of cases) {
        const res = await update(member.membershipId, body);
        if (text === undefined) {
          assert.equal(res.status, 400, res.text); // the validator's own text (docs/rest.md#validation)
          assert.equal(res.body.resourceType, 'OperationOutcome');
        } else assertOutcome(res, 400, text, expression);
      }
      // A client application's profile is the client itself.
      assertOutcome(
        await update(clientMembership.id, { ...clientMembership, profile: { reference: member.profile } }),
        400,
        "A client application's profile is the client application itself",
        'ProjectMembership.profile',
      );
      // Your own admin flag stays (another admin or a super admin removes it).
      assertOutcome(await update(p.admin.membershipId, { ...(await read(p.admin.membershipId)), admin: false }), 400, 'Cannot remove your own admin rights', 'ProjectMembership.admin');
      assert.deepEqual(await read(member.membershipId), stored);
      assert.equal((await read(p.admin.membershipId)).admin, true);
    });

    test('removing a member: 200, its existing token gets 401 on its next request, a second removal 404', async () => {
      const member = await createMember(server, p.projectId);
      assert.equal((await server.fhir('GET', '/Patient', { token: member.token })).status, 200);
      const res = await call('DELETE', path(`/${member.membershipId}`), p.adminToken);
      assertOutcome(res, 200, 'Member removed');
      assertOutcome(await server.fhir('GET', '/Patient', { token: member.token }), 401, 'Unauthorized');
      assertOutcome(await call('DELETE', path(`/${member.membershipId}`), p.adminToken), 404, 'Not found');
      const list = await call('GET', path(), p.adminToken);
      assert.ok(!JSON.stringify(list.body).includes(member.membershipId));
      // Its login no longer finds a membership in the project.
      const login = await server.request('POST', '/auth/login', { body: { email: member.email, password: member.password, projectId: p.projectId } });
      assertOutcome(login, 400, 'User is not a member of this project');
    });

    test('your own membership cannot be removed (admin route and REST); a super admin removes an admin', async () => {
      assertOutcome(await call('DELETE', path(`/${p.admin.membershipId}`), p.adminToken), 400, 'Cannot remove your own membership');
      assertOutcome(await server.fhir('DELETE', `/ProjectMembership/${p.admin.membershipId}`, { token: p.adminToken }), 400, 'Cannot remove your own membership');
      assert.equal((await server.fhir('GET', '/Patient', { token: p.adminToken })).status, 200);
      const q = await createProject(server, 'Admin removal');
      const second = await createMember(server, q.projectId, { admin: true });
      assertOutcome(await call('DELETE', path(`/${second.membershipId}`, q.projectId), server.adminToken), 200, 'Member removed');
      assertOutcome(await call('GET', path('', q.projectId), second.token), 401, 'Unauthorized');
    });

    test('REST DELETE ProjectMembership/<id> by that project’s admin (contract case #135): 200, the token ends', async () => {
      const member = await createMember(server, p.projectId);
      const res = await server.fhir('DELETE', `/ProjectMembership/${member.membershipId}`, { token: p.adminToken });
      assert.equal(res.status, 200, res.text);
      assertOutcome(await server.fhir('GET', '/Patient', { token: member.token }), 401, 'Unauthorized');
      assert.equal((await server.fhir('GET', `/ProjectMembership/${member.membershipId}`, { token: p.adminToken })).status, 410);
    });

    test('REST DELETE of a membership: another project’s admin as if absent (404), a plain member 403', async () => {
      const member = await createMember(server, p.projectId);
      const plain = await createMember(server, p.projectId);
      assertOutcome(await server.fhir('DELETE', `/ProjectMembership/${member.membershipId}`, { token: other.adminToken }), 404, 'Not found');
      const byMember = await server.fhir('DELETE', `/ProjectMembership/${member.membershipId}`, { token: plain.token });
      assert.ok([403, 404].includes(byMember.status), byMember.text);
      assertOutcome(await server.fhir('DELETE', `/ProjectMembership/${plain.membershipId}`, { token: plain.token }), 403, 'Forbidden');
      // A project admin still cannot update memberships through REST (the admin route does).
      const stored = await read(member.membershipId);
      assertOutcome(await server.fhir('PUT', `/ProjectMembership/${member.membershipId}`, { token: p.adminToken, body: { ...stored, admin: true } }), 403, 'Forbidden');
      assert.equal((await server.fhir('GET', '/Patient', { token: member.token })).status, 200);
    });

    test('resending the invite: an e-mail in the outbox; a client application has none', async () => {
      const invited = await server.request('POST', `/admin/projects/${p.projectId}/invite`, {
        token: p.adminToken,
        contentType: 'application/json',
        body: { resourceType: 'Practitioner', firstName: 'Rae', lastName: 'Send', email: `rae-${randomUUID()}@example.org` },
      });
      assert.equal(invited.status, 200, invited.text);
      const email = invited.body.user.display as string;
      const res = await call('POST', path(`/${invited.body.id}/resend`), p.adminToken, {});
      assertOutcome(res, 200, 'Invite sent');
      const rows = (await server.app.db.query<{ subject: string }>('SELECT subject FROM email_outbox WHERE recipient = $1', [email])).rows;
      assert.deepEqual(rows.map((r) => r.subject), ['Welcome to Members']);
      const client = await createClient(server, p.projectId, { token: p.adminToken });
      const clientMembership = (await call('GET', path(), p.adminToken)).body.entry.find(
        (e: { resource: { user: { reference: string } } }) => e.resource.user.reference === `ClientApplication/${client.clientId}`,
      ).resource;
      assertOutcome(await call('POST', path(`/${clientMembership.id}/resend`), p.adminToken, {}), 400, 'A client application cannot be invited');
    });

    test('concurrent changes and removals of one member: no 5xx, and the member ends removed', async () => {
      const member: TestMember = await createMember(server, p.projectId);
      const stored = await read(member.membershipId);
      const results = await Promise.all([
        update(member.membershipId, { ...stored, admin: true }),
        call('DELETE', path(`/${member.membershipId}`), p.adminToken),
        update(member.membershipId, { ...stored, admin: false }),
        call('DELETE', path(`/${member.membershipId}`), server.adminToken),
      ]);
      for (const r of results) assert.ok([200, 404].includes(r.status), `${r.status} ${r.text}`);
      assertOutcome(await call('GET', path(`/${member.membershipId}`), p.adminToken), 404, 'Not found');
      const mirror = await server.app.db.query('SELECT 1 FROM auth_membership WHERE id = $1', [member.membershipId]);
      assert.equal(mirror.rows.length, 0);
    });
  });
}
