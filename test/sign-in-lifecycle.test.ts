import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { clientCredentialsToken, createClient, createMember, createProject, drivers, loginTokens, ooText, startServer, tokenRequest, type TestProject, type TestServer } from './harness.js';
import { createPatient } from './support/smart.js';

/**
 * What ends a sign-in (docs/auth.md): an inactive membership (`active: false`) signs nobody in
 * and stops its tokens, refresh tokens included; a launch id binds one sign-in; expired logins
 * are purged.
 */
for (const driver of drivers) {
  describe(`sign-in lifecycle (${driver})`, () => {
    let server: TestServer;
    let clinic: TestProject;
    before(async () => {
      server = await startServer(driver);
      clinic = await createProject(server, 'Lifecycle clinic');
    });
    after(() => server.stop());

    const json = (path: string, body: unknown, token: string | null = null) => server.request('POST', path, { body, contentType: 'application/json', token });

    /** Sets `ProjectMembership.active` as a super admin does (REST). */
    async function setActive(membershipId: string, active: boolean) {
      const membership = (await server.fhir('GET', `/ProjectMembership/${membershipId}`, { token: server.adminToken })).body;
      const res = await server.fhir('PUT', `/ProjectMembership/${membershipId}`, { token: server.adminToken, body: { ...membership, active } });
      assert.equal(res.status, 200, res.text);
    }

    test('ProjectMembership.active false: refused at login, its tokens and refresh tokens stop; true again signs in', async () => {
      const member = await createMember(server, clinic.projectId);
      const tokens = await loginTokens(server, member.email, member.password, { scope: 'openid offline_access' });
      assert.equal((await server.fhir('GET', '/Patient', { token: tokens.access_token })).status, 200);
      await setActive(member.membershipId, false);
      const refused = await server.fhir('GET', '/Patient', { token: tokens.access_token });
      assert.equal(refused.status, 401, refused.text);
      assert.equal(ooText(refused.body), 'Unauthorized');
      const refresh = await tokenRequest(server, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! });
      assert.deepEqual(refresh.body, { error: 'invalid_grant', error_description: 'Membership no longer exists' });
      const login = await json('/auth/login', { email: member.email, password: member.password });
      assert.equal(login.status, 400, login.text);
      assert.equal(ooText(login.body), 'Membership is not active');

      await setActive(member.membershipId, true);
      const again = await loginTokens(server, member.email, member.password);
      assert.equal((await server.fhir('GET', '/Patient', { token: again.access_token })).status, 200);
    });

    test('an inactive client application membership gets no client_credentials token', async () => {
      const client = await createClient(server, clinic.projectId);
      const membership = (await server.fhir('GET', `/ProjectMembership?user=ClientApplication/${client.clientId}`, { token: server.adminToken })).body.entry[0].resource;
      await setActive(membership.id, false);
      assert.equal((await server.fhir('GET', '/Patient', { token: client.token })).status, 401);
      await assert.rejects(clientCredentialsToken(server, client.clientId, client.secret), /client_credentials failed: 401/);
    });

    test('a launch id binds one sign-in: a second sign-in with it is refused', async () => {
      const patient = await createPatient(server, clinic.projectId, 'Launched');
      const created = await json('/auth/launch', { patient: `Patient/${patient}` }, clinic.adminToken);
      assert.equal(created.status, 201, created.text);
      const member = await createMember(server, clinic.projectId);
      const first = await json('/auth/login', { email: member.email, password: member.password, scope: 'launch openid', launch: created.body.launch });
      assert.equal(first.status, 200, first.text);
      const second = await json('/auth/login', { email: member.email, password: member.password, scope: 'launch openid', launch: created.body.launch });
      assert.equal(second.status, 400, second.text);
      assert.equal(ooText(second.body), 'Invalid or expired launch');
      // A wrong password does not use it up.
      const other = await json('/auth/launch', { patient: `Patient/${patient}` }, clinic.adminToken);
      const wrong = await json('/auth/login', { email: member.email, password: 'wrong-password', launch: other.body.launch });
      assert.equal(ooText(wrong.body), 'Email or password is invalid');
      const right = await json('/auth/login', { email: member.email, password: member.password, scope: 'launch openid', launch: other.body.launch });
      assert.equal(right.status, 200, right.text);
    });

    test('expired logins and refresh tokens are purged when logins are made; live ones stay', async () => {
      const member = await createMember(server, clinic.projectId);
      const live = await loginTokens(server, member.email, member.password, { scope: 'openid offline_access' });
      const db = server.app.db;
      // Age two logins past every lifetime: one without refresh tokens, one whose refresh tokens expired too.
      const stale = await loginTokens(server, member.email, member.password);
      const staleRefresh = await loginTokens(server, member.email, member.password, { scope: 'openid offline_access' });
      const idOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()).login_id as string;
      const old = "now() - interval '40 days'";
      await db.query(`UPDATE auth_login SET expires_at = ${old}, code_expires_at = ${old} WHERE id = ANY($1)`, [[idOf(stale.access_token), idOf(staleRefresh.access_token)]]);
      await db.query(`UPDATE auth_refresh_token SET expires_at = ${old} WHERE login_id = $1`, [idOf(staleRefresh.access_token)]);
      const count = async (sql: string, ids: string[]) => (await db.query<{ n: number }>(sql, [ids])).rows[0].n;
      const logins = (ids: string[]) => count('SELECT count(*)::int AS n FROM auth_login WHERE id = ANY($1)', ids);
      assert.equal(await logins([idOf(stale.access_token), idOf(staleRefresh.access_token)]), 2);

      await loginTokens(server, member.email, member.password); // any login purges
      assert.equal(await logins([idOf(stale.access_token), idOf(staleRefresh.access_token)]), 0);
      assert.equal(await count('SELECT count(*)::int AS n FROM auth_refresh_token WHERE login_id = ANY($1)', [idOf(staleRefresh.access_token)]), 0);
      assert.equal(await logins([idOf(live.access_token)]), 1);
      const refreshed = await tokenRequest(server, { grant_type: 'refresh_token', refresh_token: live.refresh_token! });
      assert.equal(refreshed.status, 200, refreshed.text);
    });
  });
}
