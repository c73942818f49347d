import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Patient, Practitioner, ProjectMembership, Resource, User } from '@medplum/fhirtypes';
import { createProject, drivers, ooText, startServer, type ApiResponse, type TestProject, type TestServer } from './harness.js';

const N = 20;

/**
 * Simultaneous identical invites over real HTTP (docs/invite.md "Concurrency"): exactly one
 * 200, the others the contract's 409, and exactly one User, profile and membership afterwards
 * (counted as the super admin through the FHIR API).
 */
for (const driver of drivers) {
  describe(`invite concurrency (${driver})`, () => {
    let server: TestServer;
    let a: TestProject;
    let b: TestProject;
    before(async () => {
      server = await startServer(driver);
      a = await createProject(server, 'Concurrent A');
      b = await createProject(server, 'Concurrent B');
    });
    after(() => server.stop());

    const invite = (projectId: string, body: unknown): Promise<ApiResponse> =>
      server.request('POST', `/admin/projects/${projectId}/invite`, { body, contentType: 'application/json', token: server.adminToken });
    const email = (): string => `race-${randomBytes(5).toString('hex')}@example.org`;
    /** Fires N copies at once (all requests are in flight before any answer is awaited). */
    const burst = (projectId: string, body: unknown): Promise<ApiResponse[]> =>
      Promise.all(Array.from({ length: N }, () => invite(projectId, body)));
    const all = async <T extends Resource>(type: T['resourceType']): Promise<T[]> => {
      const res = await server.fhir('GET', `/${type}?_count=1000`, { token: server.adminToken });
      assert.equal(res.status, 200, res.text);
      return (res.body.entry ?? []).map((e: { resource: T }) => e.resource);
    };
    const hasEmail = (r: Patient | Practitioner, address: string) => (r.telecom ?? []).some((t) => t.system === 'email' && t.value === address);
    const statuses = (results: ApiResponse[]) => results.map((r) => r.status).sort();

    function assertOneWinner(results: ApiResponse[], text: string): ApiResponse {
      assert.deepEqual(statuses(results), [200, ...Array(N - 1).fill(409)], results.map((r) => `${r.status} ${r.text}`).join('\n'));
      for (const r of results.filter((x) => x.status === 409)) {
        assert.equal(r.body.issue[0].code, 'conflict');
        assert.equal(ooText(r.body), text);
      }
      return results.find((r) => r.status === 200) as ApiResponse;
    }

    async function assertExactlyOne(projectId: string, address: string, profileType: 'Patient' | 'Practitioner'): Promise<void> {
      const users = (await all<User>('User')).filter((u) => u.email === address);
      assert.equal(users.length, 1, 'one User');
      const profiles = (await all<Patient | Practitioner>(profileType)).filter((p) => p.meta?.project === projectId && hasEmail(p, address));
      assert.equal(profiles.length, 1, 'one profile');
      const memberships = (await all<ProjectMembership>('ProjectMembership')).filter(
        (m) => m.project.reference === `Project/${projectId}` && m.user.reference === `User/${users[0].id}`,
      );
      assert.equal(memberships.length, 1, 'one membership');
    }

    test(`${N} identical invites of a new practitioner: 1×200, ${N - 1}×409, one of everything`, async () => {
      const address = email();
      const results = await burst(a.projectId, { resourceType: 'Practitioner', firstName: 'Race', lastName: 'Condition', email: address });
      const winner = assertOneWinner(results, 'User is already a member of this project');
      assert.equal(winner.body.user.display, address);
      await assertExactlyOne(a.projectId, address, 'Practitioner');
    });

    test(`${N} identical invites of an existing user into a second project`, async () => {
      const address = email();
      const body = { resourceType: 'Practitioner', firstName: 'Two', lastName: 'Projects', email: address };
      assert.equal((await invite(a.projectId, body)).status, 200);
      assertOneWinner(await burst(b.projectId, body), 'User is already a member of this project');
      await assertExactlyOne(b.projectId, address, 'Practitioner');
      const memberships = (await all<ProjectMembership>('ProjectMembership')).filter((m) => m.user.display === address);
      assert.equal(memberships.length, 2);
    });

    test(`${N} identical invites of a patient (project-scoped user)`, async () => {
      const address = email();
      const results = await burst(a.projectId, { resourceType: 'Patient', firstName: 'Pat', lastName: 'Race', email: address });
      assertOneWinner(results, 'User is already a member of this project');
      await assertExactlyOne(a.projectId, address, 'Patient');
    });

    test(`${N} identical invites by externalId only: one member, the rest 409 External ID`, async () => {
      const externalId = `ext-${randomUUID()}`;
      const lastName = `Ext${randomBytes(4).toString('hex')}`;
      const results = await burst(a.projectId, { resourceType: 'Patient', firstName: 'Ext', lastName, externalId });
      const winner = assertOneWinner(results, 'External ID already exists in this project');
      const memberships = (await all<ProjectMembership>('ProjectMembership')).filter((m) => m.externalId === externalId);
      assert.equal(memberships.length, 1);
      assert.equal(memberships[0].id, winner.body.id);
      const users = (await all<User>('User')).filter((u) => `User/${u.id}` === winner.body.user.reference);
      assert.equal(users.length, 1);
      // The losers' Users and profiles were rolled back with their transactions.
      const patients = (await all<Patient>('Patient')).filter((p) => p.name?.[0]?.family === lastName && p.meta?.project === a.projectId);
      assert.equal(patients.length, 1);
    });

    test(`${N} identical upserts: all 200, one membership`, async () => {
      const address = email();
      const body = { resourceType: 'Practitioner', firstName: 'Up', lastName: 'Sert', email: address, upsert: true, membership: { admin: true } };
      const results = await burst(a.projectId, body);
      assert.deepEqual(statuses(results), Array(N).fill(200), results.map((r) => `${r.status} ${r.text}`).join('\n'));
      assert.equal(new Set(results.map((r) => r.body.id)).size, 1, 'every answer is the same membership');
      await assertExactlyOne(a.projectId, address, 'Practitioner');
    });
  });
}
