import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { CodeSystem, ProjectMembership, User } from '@medplum/fhirtypes';
import {
  createClient,
  createMember,
  createProject,
  drivers,
  ooText,
  startServer,
  type ApiResponse,
  type TestMember,
  type TestProject,
  type TestServer,
} from './harness.js';

/**
 * Tenancy matrix (docs/auth.md "Tenancy"): callers of project A against project B's
 * resources. Another project's resource behaves exactly as if it did not exist; afterwards
 * nothing of B has changed (checked as super admin).
 */
for (const driver of drivers) {
  describe(`tenancy (${driver})`, () => {
    let server: TestServer;
    let a: TestProject;
    let b: TestProject;
    let aMember: TestMember;
    let aClientToken: string;
    let bPatientId: string;
    let bSnapshot: string;
    const actors: Array<[string, () => string]> = [
      ['A admin', () => a.adminToken],
      ['A member', () => aMember.token],
      ['A client', () => aClientToken],
    ];

    before(async () => {
      server = await startServer(driver);
      a = await createProject(server, 'Project A');
      b = await createProject(server, 'Project B');
      aMember = await createMember(server, a.projectId);
      aClientToken = (await createClient(server, a.projectId, { token: a.adminToken })).token;
      const created = await server.fhir('POST', '/Patient', {
        token: b.adminToken,
        body: { resourceType: 'Patient', name: [{ family: 'Bravo' }], identifier: [{ system: 'urn:b', value: 'b-1' }] },
      });
      assert.equal(created.status, 201, created.text);
      bPatientId = created.body.id;
      const updated = await server.fhir('PUT', `/Patient/${bPatientId}`, {
        token: b.adminToken,
        body: { ...created.body, gender: 'female' },
      });
      assert.equal(updated.status, 200, updated.text);
      bSnapshot = await snapshotOfB();
    });
    after(() => server.stop());

    /** Everything stored in project B, as the super admin sees it (current rows and history). */
    async function snapshotOfB(): Promise<string> {
      const db = server.app.db;
      const current = await db.query('SELECT resource_type, id, version_id, deleted, content FROM resource WHERE project_id = $1 ORDER BY 1, 2', [b.projectId]);
      const history = await db.query('SELECT resource_type, id, version_id FROM resource_history WHERE project_id = $1 ORDER BY 1, 2, 3', [b.projectId]);
      return JSON.stringify([current.rows, history.rows]);
    }

    function assertNotFound(res: ApiResponse, what: string): void {
      assert.equal(res.status, 404, `${what}: ${res.text}`);
      assert.equal(res.body.issue[0].code, 'not-found', what);
      assert.equal(ooText(res.body), 'Not found', what);
    }

    for (const [actor, token] of actors) {
      test(`${actor}: B's Patient is invisible for read, vread, history`, async () => {
        assertNotFound(await server.fhir('GET', `/Patient/${bPatientId}`, { token: token() }), 'read');
        assertNotFound(await server.fhir('GET', `/Patient/${bPatientId}/_history/1`, { token: token() }), 'vread');
        assertNotFound(await server.fhir('GET', `/Patient/${bPatientId}/_history`, { token: token() }), 'instance history');
        const typeHistory = await server.fhir('GET', '/Patient/_history', { token: token() });
        assert.equal(typeHistory.status, 200, typeHistory.text);
        assert.ok(!typeHistory.text.includes(bPatientId), 'type history leaks B');
      });

      test(`${actor}: B's Patient is absent from search`, async () => {
        for (const query of [`_id=${bPatientId}`, 'family=Bravo', 'identifier=urn:b|b-1', '']) {
          const res = await server.fhir('GET', `/Patient?${query}`, { token: token() });
          assert.equal(res.status, 200, res.text);
          // (The self link repeats the query, so look at the entries, not the whole text.)
          assert.ok(!JSON.stringify(res.body.entry ?? []).includes(bPatientId), `search ${query} leaks B`);
          if (query) assert.equal(res.body.total, 0, query);
        }
      });

      test(`${actor}: update and delete of B's Patient → 404, B unchanged`, async () => {
        const put = await server.fhir('PUT', `/Patient/${bPatientId}`, {
          token: token(),
          body: { resourceType: 'Patient', id: bPatientId, name: [{ family: 'Hijacked' }] },
        });
        assertNotFound(put, 'update');
        assertNotFound(await server.fhir('DELETE', `/Patient/${bPatientId}`, { token: token() }), 'delete');
        assert.equal(await snapshotOfB(), bSnapshot);
      });

      test(`${actor}: B's account resources are invisible`, async () => {
        assertNotFound(await server.fhir('GET', `/Project/${b.projectId}`, { token: token() }), 'Project');
        assertNotFound(await server.fhir('GET', `/ProjectMembership/${b.admin.membershipId}`, { token: token() }), 'ProjectMembership');
        assertNotFound(await server.fhir('GET', `/User/${b.admin.userId}`, { token: token() }), 'User');
      });

      test(`${actor}: POST /admin/projects/<B>/client → 403`, async () => {
        const res = await server.request('POST', `/admin/projects/${b.projectId}/client`, {
          token: token(),
          body: { name: 'sneaky' },
          contentType: 'application/json',
        });
        assert.equal(res.status, 403, res.text);
        assert.equal(res.body.issue[0].code, 'forbidden');
        assert.equal(ooText(res.body), 'Forbidden');
        assert.equal(await snapshotOfB(), bSnapshot);
      });

      test(`${actor}: writes land in A and are visible to A only`, async () => {
        const created = await server.fhir('POST', '/Observation', {
          token: token(),
          body: { resourceType: 'Observation', status: 'final', code: { text: actor } },
        });
        assert.equal(created.status, 201, created.text);
        assert.equal(created.body.meta.project, a.projectId);
        assert.equal((await server.fhir('GET', `/Observation/${created.body.id}`, { token: a.adminToken })).status, 200);
        assertNotFound(await server.fhir('GET', `/Observation/${created.body.id}`, { token: b.adminToken }), 'B reads A');
      });

      test(`${actor}: cannot create or change Project/User/ProjectMembership/ClientApplication via REST → 403`, async () => {
        const bodies = [
          { resourceType: 'Project', name: 'Mine' },
          { resourceType: 'User', firstName: 'Eve', lastName: 'Il', email: `eve-${actor.replace(' ', '')}@example.org` },
          {
            resourceType: 'ProjectMembership',
            project: { reference: `Project/${a.projectId}` },
            user: { reference: `User/${aMember.userId}` },
            profile: { reference: aMember.profile },
            admin: true,
          },
          { resourceType: 'ClientApplication', name: 'Mine', secret: 'x' },
        ];
        for (const body of bodies) {
          const res = await server.fhir('POST', `/${body.resourceType}`, { token: token(), body });
          assert.equal(res.status, 403, `${body.resourceType}: ${res.text}`);
          assert.equal(ooText(res.body), 'Forbidden');
        }
        // Promoting a membership to admin is refused too (the client does not even see the member's).
        const own = await server.fhir('GET', `/ProjectMembership/${aMember.membershipId}`, { token: token() });
        if (actor === 'A client') return assertNotFound(own, 'a member membership, read by a client');
        assert.equal(own.status, 200, own.text);
        const promote = await server.fhir('PUT', `/ProjectMembership/${aMember.membershipId}`, { token: token(), body: { ...own.body, admin: true } });
        assert.equal(promote.status, 403, promote.text);
      });

      test(`${actor}: cannot delete account resources of A (403, or 404 where it cannot see them; its own membership 400) nor see B's (404)`, async () => {
        // Only the admin sees the project's other accounts; to others they do not exist.
        const seesAccounts = actor === 'A admin';
        for (const path of [`/ProjectMembership/${a.admin.membershipId}`, `/User/${a.admin.userId}`, `/Project/${a.projectId}`]) {
          const res = await server.fhir('DELETE', path, { token: token() });
          if (!seesAccounts && !path.startsWith('/Project/')) {
            assertNotFound(res, `${actor} DELETE ${path}`);
            continue;
          }
          if (path.startsWith('/ProjectMembership/')) {
            // The admin removes the project's members, but not itself (docs/auth.md#managing-members).
            assert.equal(res.status, 400, `${path}: ${res.text}`);
            assert.equal(ooText(res.body), 'Cannot remove your own membership');
            continue;
          }
          assert.equal(res.status, 403, `${path}: ${res.text}`);
          assert.equal(ooText(res.body), 'Forbidden');
        }
        assertNotFound(await server.fhir('DELETE', `/ProjectMembership/${b.admin.membershipId}`, { token: token() }), 'B membership');
        assertNotFound(await server.fhir('DELETE', `/Project/${b.projectId}`, { token: token() }), 'B project');
        assert.equal((await server.fhir('GET', `/ProjectMembership/${a.admin.membershipId}`, { token: server.adminToken })).status, 200);
        assert.equal(await snapshotOfB(), bSnapshot);
      });
    }

    test('project admin creates a client in its own project; a member cannot', async () => {
      const ok = await server.request('POST', `/admin/projects/${a.projectId}/client`, {
        token: a.adminToken,
        body: { name: 'A app' },
        contentType: 'application/json',
      });
      assert.equal(ok.status, 201, ok.text);
      assert.equal(typeof ok.body.secret, 'string');
      assert.equal(ok.body.meta.project, a.projectId);
      const member = await server.request('POST', `/admin/projects/${a.projectId}/client`, {
        token: aMember.token,
        body: { name: 'member app' },
        contentType: 'application/json',
      });
      assert.equal(member.status, 403, member.text);
      assert.equal(ooText(member.body), 'Forbidden');
    });

    test('super admin: unknown project → 404; B visible', async () => {
      const token = server.adminToken;
      const res = await server.request('POST', '/admin/projects/does-not-exist/client', { token, body: { name: 'x' }, contentType: 'application/json' });
      assert.equal(res.status, 404, res.text);
      assert.equal(ooText(res.body), 'Not found');
      assert.equal((await server.fhir('GET', `/Patient/${bPatientId}`, { token })).status, 200);
      assert.equal((await server.fhir('GET', `/Patient?_id=${bPatientId}`, { token })).body.total, 1);
    });

    test('shared content: readable by a member, not writable (403)', async () => {
      const shared = await server.app.system
        .create<CodeSystem>({ resourceType: 'CodeSystem', url: 'http://example.org/shared-cs', status: 'active', content: 'complete', concept: [{ code: 'x' }] });
      assert.equal(shared.meta?.project, undefined);
      const read = await server.fhir('GET', `/CodeSystem/${shared.id}`, { token: aMember.token });
      assert.equal(read.status, 200, read.text);
      const put = await server.fhir('PUT', `/CodeSystem/${shared.id}`, { token: aMember.token, body: { ...read.body, status: 'retired' } });
      assert.equal(put.status, 403, put.text);
      assert.equal(ooText(put.body), 'Forbidden');
      const del = await server.fhir('DELETE', `/CodeSystem/${shared.id}`, { token: a.adminToken });
      assert.equal(del.status, 403, del.text);
      const after = await server.fhir('GET', `/CodeSystem/${shared.id}`);
      assert.equal(after.body.status, 'active');
      assert.equal(after.body.meta.versionId, '1');
    });

    test("a plain member sees only its own User and membership; the project's admin sees all of them", async () => {
      const other = await createMember(server, a.projectId);
      const asMember = (path: string) => server.fhir('GET', path, { token: aMember.token });
      assert.equal((await asMember(`/User/${aMember.userId}`)).status, 200);
      assert.equal((await asMember(`/ProjectMembership/${aMember.membershipId}`)).status, 200);
      for (const path of [`/User/${other.userId}`, `/ProjectMembership/${other.membershipId}`, `/User/${a.admin.userId}`, `/User/${other.userId}/_history`]) {
        assertNotFound(await asMember(path), `member GET ${path}`);
      }
      const users = await asMember('/User');
      assert.deepEqual(users.body.entry.map((e: { resource: User }) => e.resource.id), [aMember.userId]);
      const memberships = await asMember('/ProjectMembership');
      assert.deepEqual(memberships.body.entry.map((e: { resource: ProjectMembership }) => e.resource.id), [aMember.membershipId]);
      const history = await asMember('/User/_history');
      assert.ok(history.body.entry.every((e: { resource: User }) => e.resource.id === aMember.userId), history.text);
      assert.equal((await asMember(`/Project/${a.projectId}`)).status, 200, 'the project itself stays readable');

      const asAdmin = await server.fhir('GET', '/User', { token: a.adminToken });
      const ids = asAdmin.body.entry.map((e: { resource: User }) => e.resource.id);
      assert.ok(ids.includes(other.userId) && ids.includes(aMember.userId), asAdmin.text);
    });

    test('User resources never contain passwordHash (read, search, history, as the user, admin and super admin)', async () => {
      const superAdmin = server.adminToken;
      const requests: Array<[string, string | undefined]> = [
        [`/User/${aMember.userId}`, aMember.token],
        [`/User/${aMember.userId}`, a.adminToken],
        [`/User/${aMember.userId}`, superAdmin],
        [`/User/${aMember.userId}/_history`, a.adminToken],
        [`/User/${aMember.userId}/_history/1`, superAdmin],
        ['/User', aMember.token],
        ['/User', a.adminToken],
        ['/User', superAdmin],
        ['/User/_history', superAdmin],
      ];
      for (const [path, token] of requests) {
        const res = await server.fhir('GET', path, { token });
        assert.equal(res.status, 200, `${path}: ${res.text}`);
        assert.ok(res.text.includes(aMember.userId), `${path} should show the user`);
        assert.ok(!res.text.includes('passwordHash') && !res.text.includes('scrypt$'), `${path} leaks a hash`);
      }
    });

    test('a super admin read-modify-write of a User keeps the password working', async () => {
      const token = server.adminToken;
      const read = await server.fhir('GET', `/User/${aMember.userId}`, { token });
      const put = await server.fhir('PUT', `/User/${aMember.userId}`, { token, body: { ...read.body, firstName: 'Renamed' } });
      assert.equal(put.status, 200, put.text);
      assert.equal(put.body.passwordHash, undefined);
      const login = await server.request('POST', '/auth/login', {
        body: { email: aMember.email, password: aMember.password },
        contentType: 'application/json',
        token: null,
      });
      assert.equal(login.status, 200, login.text);
    });
  });
}
