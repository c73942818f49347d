import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setPassword } from '../src/auth/accounts.js';
import { clientCredentialsToken, createClient, createMember, createProject, createTestDatabase, drivers, loginTokens, ooText, startServer, type ApiResponse, type TestServer } from './harness.js';

/**
 * Revocation (docs/auth.md#revocation): removing or demoting a member, changing a password and
 * logging out take effect on the next request, though the access token itself is still
 * unexpired and correctly signed. Before, such a token worked until it expired (1 h): a demoted
 * admin could still invite an admin.
 */
function assertUnauthorized(res: ApiResponse): void {
  assert.equal(res.status, 401, res.text);
  assert.equal(ooText(res.body), 'Unauthorized');
}

for (const driver of drivers) {
  describe(`revocation (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver);
    });
    after(() => server.stop());

    test('a removed member: the old token is refused on the next request', async () => {
      const p = await createProject(server, 'Removal');
      const member = await createMember(server, p.projectId);
      assert.equal((await server.fhir('GET', '/Patient', { token: member.token })).status, 200);
      const removed = await server.fhir('DELETE', `/ProjectMembership/${member.membershipId}`, { token: server.adminToken });
      assert.equal(removed.status, 200, removed.text);
      assertUnauthorized(await server.fhir('GET', '/Patient', { token: member.token }));
    });

    test('a member given an access policy: its token, used before, follows the policy on its next request', async () => {
      // The authorized caller of a token is kept between requests (src/auth/access-state.ts):
      // a changed membership must replace it at once.
      const p = await createProject(server, 'Policy later');
      const member = await createMember(server, p.projectId);
      for (let i = 0; i < 3; i++) assert.equal((await server.fhir('GET', '/Patient', { token: member.token })).status, 200);
      const policy = await server.fhir('POST', '/AccessPolicy', { token: p.adminToken, body: { resourceType: 'AccessPolicy', resource: [{ resourceType: 'Observation' }] } });
      assert.equal(policy.status, 201, policy.text);
      const members = `/admin/projects/${p.projectId}/members/${member.membershipId}`;
      const stored = await server.request('GET', members, { token: p.adminToken });
      assert.equal(stored.status, 200, stored.text);
      const set = await server.request('POST', members, { token: p.adminToken, body: { ...stored.body, accessPolicy: { reference: `AccessPolicy/${policy.body.id}` } }, contentType: 'application/json' });
      assert.equal(set.status, 200, set.text);
      const refused = await server.fhir('GET', '/Patient', { token: member.token });
      assert.equal(refused.status, 403, refused.text);
      assert.equal(ooText(refused.body), 'Forbidden');
      assert.equal((await server.fhir('GET', '/Observation', { token: member.token })).status, 200);
    });

    test('a demoted admin cannot invite an admin with the old token', async () => {
      const p = await createProject(server, 'Demotion');
      const admin = p.admin;
      const membership = (await server.fhir('GET', `/ProjectMembership/${admin.membershipId}`, { token: server.adminToken })).body;
      const demoted = await server.fhir('PUT', `/ProjectMembership/${admin.membershipId}`, { token: server.adminToken, body: { ...membership, admin: false } });
      assert.equal(demoted.status, 200, demoted.text);
      const invite = await server.request('POST', `/admin/projects/${p.projectId}/invite`, {
        token: admin.token,
        contentType: 'application/json',
        body: { resourceType: 'Practitioner', firstName: 'Eve', lastName: 'Admin', email: `eve-${Date.now()}@example.org`, membership: { admin: true } },
      });
      assertUnauthorized(invite);
      // A fresh login gets a token with the rights the membership has now: a plain member's.
      const fresh = (await loginTokens(server, admin.email, admin.password, { projectId: p.projectId })).access_token;
      assert.equal((await server.fhir('GET', '/Patient', { token: fresh })).status, 200);
      const again = await server.request('POST', `/admin/projects/${p.projectId}/invite`, {
        token: fresh,
        contentType: 'application/json',
        body: { resourceType: 'Practitioner', firstName: 'Eve', lastName: 'Admin', email: `eve2-${Date.now()}@example.org` },
      });
      assert.equal(again.status, 403, again.text);
    });

    test('a password change ends the sessions of the old password', async () => {
      const p = await createProject(server, 'Password');
      const member = await createMember(server, p.projectId);
      const tokens = await loginTokens(server, member.email, member.password, { projectId: p.projectId, scope: 'openid offline_access' });
      assert.equal((await server.fhir('GET', '/Patient', { token: tokens.access_token })).status, 200);
      await setPassword(server.app.system, member.userId, 'a-brand-new-password', server.config.passwordCost);
      assertUnauthorized(await server.fhir('GET', '/Patient', { token: tokens.access_token }));
      assertUnauthorized(await server.fhir('GET', '/Patient', { token: member.token }));
      const refresh = await server.request('POST', '/oauth2/token', {
        raw: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token ?? '' }).toString(),
        contentType: 'application/x-www-form-urlencoded',
        token: null,
      });
      assert.equal(refresh.status, 400, refresh.text);
      assert.equal(refresh.body.error, 'invalid_grant');
      const fresh = (await loginTokens(server, member.email, 'a-brand-new-password', { projectId: p.projectId })).access_token;
      assert.equal((await server.fhir('GET', '/Patient', { token: fresh })).status, 200);
    });

    test('logout: POST /oauth2/logout ends the login; other logins of the user keep working', async () => {
      const p = await createProject(server, 'Logout');
      const member = await createMember(server, p.projectId);
      const other = await loginTokens(server, member.email, member.password, { projectId: p.projectId });
      const out = await server.request('POST', '/oauth2/logout', { token: member.token });
      assert.equal(out.status, 200, out.text);
      assertUnauthorized(await server.fhir('GET', '/Patient', { token: member.token }));
      assert.equal((await server.fhir('GET', '/Patient', { token: other.access_token })).status, 200);
      assertUnauthorized(await server.request('POST', '/oauth2/logout', { token: null }));
    });

    test('logout with a client application\'s token ends that token; a new client_credentials token works', async () => {
      // Before, logout answered 200 and the client's token went on working.
      const p = await createProject(server, 'Client logout');
      const client = await createClient(server, p.projectId, { token: p.adminToken });
      const other = await clientCredentialsToken(server, client.clientId, client.secret);
      assert.equal((await server.fhir('GET', '/Patient', { token: client.token })).status, 200);
      const out = await server.request('POST', '/oauth2/logout', { token: client.token });
      assert.equal(out.status, 200, out.text);
      assertUnauthorized(await server.fhir('GET', '/Patient', { token: client.token }));
      // Only that token: another token of the same client, and a new one, keep working.
      assert.equal((await server.fhir('GET', '/Patient', { token: other.access_token })).status, 200);
      const fresh = await clientCredentialsToken(server, client.clientId, client.secret);
      assert.equal((await server.fhir('GET', '/Patient', { token: fresh.access_token })).status, 200);
    });
  });
}

if (drivers.includes('pg')) {
  describe('revocation across two nodes (pg)', () => {
    test('demoted on node A: the old token stops working on node B', async () => {
      const databaseUrl = await createTestDatabase();
      // One public URL (the tokens' issuer) for both nodes, as behind one load balancer.
      const env = { LATTICE_PUBLIC_URL: 'http://lattice.test' };
      const a = await startServer('pg', { databaseUrl, env });
      const b = await startServer('pg', { databaseUrl, env });
      try {
        const p = await createProject(a, 'Two nodes');
        const admin = p.admin;
        // Node B has seen (and cached) the token's membership as admin.
        assert.equal((await b.fhir('GET', `/ProjectMembership/${admin.membershipId}`, { token: admin.token })).status, 200);
        const membership = (await a.fhir('GET', `/ProjectMembership/${admin.membershipId}`, { token: a.adminToken })).body;
        assert.equal((await a.fhir('PUT', `/ProjectMembership/${admin.membershipId}`, { token: a.adminToken, body: { ...membership, admin: false } })).status, 200);
        // The very next request through B: it waits for the listening connection to catch up
        // with A's commit before it trusts its cached membership (docs/auth.md#revocation).
        assertUnauthorized(await b.fhir('GET', '/Patient', { token: admin.token }));
      } finally {
        await a.stop();
        await b.stop();
      }
    });
  });
}
