import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createLocalJWKSet, jwtVerify } from 'jose';
import {
  clientCredentialsToken,
  createClient,
  createMember,
  createProject,
  drivers,
  loginTokens,
  ooText,
  pkcePair,
  startServer,
  tokenRequest,
  type TestServer,
} from './harness.js';

/** End-to-end login and token flows over HTTP (docs/auth.md). */
for (const driver of drivers) {
  describe(`auth: tokens (${driver})`, () => {
    let server: TestServer;
    const admin = { email: 'admin@example.com', password: 'admin-password-123' };
    before(async () => {
      server = await startServer(driver);
    });
    after(() => server.stop());

    const login = (body: Record<string, unknown>) =>
      server.request('POST', '/auth/login', { body, contentType: 'application/json', token: null });

    test('login with PKCE S256 then code exchange yields a working bearer token', async () => {
      const pkce = pkcePair();
      const res = await login({ ...admin, scope: 'openid offline_access', codeChallenge: pkce.challenge, codeChallengeMethod: 'S256' });
      assert.equal(res.status, 200, res.text);
      assert.equal(typeof res.body.login, 'string');
      assert.equal(typeof res.body.code, 'string');
      const tokens = await tokenRequest(server, { grant_type: 'authorization_code', code: res.body.code, code_verifier: pkce.verifier });
      assert.equal(tokens.status, 200, tokens.text);
      assert.equal(tokens.body.token_type, 'Bearer');
      assert.equal(tokens.body.expires_in, 3600);
      assert.match(tokens.body.project.reference, /^Project\//);
      assert.match(tokens.body.profile.reference, /^Practitioner\//);
      assert.equal(typeof tokens.body.refresh_token, 'string');
      assert.equal(tokens.headers.get('cache-control'), 'no-store');
      const read = await server.fhir('GET', '/Patient', { token: tokens.body.access_token });
      assert.equal(read.status, 200, read.text);
    });

    test('wrong PKCE verifier → invalid_grant, and the code is then spent', async () => {
      const pkce = pkcePair();
      const res = await login({ ...admin, codeChallenge: pkce.challenge, codeChallengeMethod: 'S256' });
      const wrong = await tokenRequest(server, { grant_type: 'authorization_code', code: res.body.code, code_verifier: pkcePair().verifier });
      assert.equal(wrong.status, 400);
      assert.equal(wrong.body.error, 'invalid_grant');
      assert.equal(typeof wrong.body.error_description, 'string');
      const right = await tokenRequest(server, { grant_type: 'authorization_code', code: res.body.code, code_verifier: pkce.verifier });
      assert.equal(right.body.error, 'invalid_grant');
    });

    test('missing verifier when a challenge was given → invalid_grant', async () => {
      const res = await login({ ...admin, codeChallenge: pkcePair().challenge, codeChallengeMethod: 'S256' });
      const tokens = await tokenRequest(server, { grant_type: 'authorization_code', code: res.body.code });
      assert.equal(tokens.status, 400);
      assert.equal(tokens.body.error, 'invalid_grant');
    });

    test('PKCE plain is accepted', async () => {
      const { verifier } = pkcePair();
      const res = await login({ ...admin, codeChallenge: verifier, codeChallengeMethod: 'plain' });
      const tokens = await tokenRequest(server, { grant_type: 'authorization_code', code: res.body.code, code_verifier: verifier });
      assert.equal(tokens.status, 200, tokens.text);
    });

    test('an authorization code is single-use', async () => {
      const pkce = pkcePair();
      const res = await login({ ...admin, codeChallenge: pkce.challenge, codeChallengeMethod: 'S256' });
      const params = { grant_type: 'authorization_code', code: res.body.code, code_verifier: pkce.verifier };
      assert.equal((await tokenRequest(server, params)).status, 200);
      const again = await tokenRequest(server, params);
      assert.equal(again.status, 400);
      assert.equal(again.body.error, 'invalid_grant');
    });

    test('wrong password and unknown e-mail fail alike', async () => {
      const wrong = await login({ email: admin.email, password: 'not-the-password' });
      const unknown = await login({ email: 'nobody@example.com', password: 'whatever-123' });
      for (const res of [wrong, unknown]) {
        assert.equal(res.status, 400);
        assert.equal(res.body.issue[0].code, 'invalid');
        assert.equal(ooText(res.body), 'Email or password is invalid');
      }
      assert.deepEqual(wrong.body, unknown.body);
    });

    test('e-mail is matched case-insensitively', async () => {
      const res = await login({ email: 'ADMIN@Example.com', password: admin.password });
      assert.equal(res.status, 200, res.text);
    });

    test('several memberships: login lists them, /auth/profile picks one', async () => {
      const a = await createProject(server, 'Multi A');
      const b = await createProject(server, 'Multi B');
      const person = await createMember(server, a.projectId);
      const second = await createMember(server, b.projectId, { email: person.email, password: person.password });
      const res = await login({ email: person.email, password: person.password });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.code, undefined);
      const listed = res.body.memberships as Array<{ id: string; project: { reference: string; display: string }; profile: { reference: string } }>;
      assert.deepEqual(listed.map((m) => m.id).sort(), [person.membershipId, second.membershipId].sort());
      const inB = listed.find((m) => m.id === second.membershipId)!;
      assert.deepEqual(inB.project, { reference: `Project/${b.projectId}`, display: 'Multi B' });
      assert.equal(inB.profile.reference, second.profile);

      const chosen = await server.request('POST', '/auth/profile', {
        body: { login: res.body.login, profile: second.membershipId },
        contentType: 'application/json',
        token: null,
      });
      assert.equal(chosen.status, 200, chosen.text);
      const tokens = await tokenRequest(server, { grant_type: 'authorization_code', code: chosen.body.code });
      assert.equal(tokens.status, 200, tokens.text);
      assert.equal(tokens.body.project.reference, `Project/${b.projectId}`);

      const direct = await loginTokens(server, person.email, person.password, { projectId: a.projectId });
      assert.equal(direct.project.reference, `Project/${a.projectId}`);
    });

    test('/auth/profile refuses a membership of someone else', async () => {
      const p = await createProject(server, 'Profile thief');
      const res = await login({ ...admin });
      const stolen = await server.request('POST', '/auth/profile', {
        body: { login: res.body.login, profile: p.admin.membershipId },
        contentType: 'application/json',
        token: null,
      });
      assert.equal(stolen.status, 400);
    });

    test('refresh token rotates; reusing a spent one → invalid_grant and ends the family', async () => {
      const first = await loginTokens(server, admin.email, admin.password, { scope: 'openid offline_access' });
      const second = await tokenRequest(server, { grant_type: 'refresh_token', refresh_token: first.refresh_token! });
      assert.equal(second.status, 200, second.text);
      assert.notEqual(second.body.refresh_token, first.refresh_token);
      assert.equal((await server.fhir('GET', '/Patient', { token: second.body.access_token })).status, 200);

      const reuse = await tokenRequest(server, { grant_type: 'refresh_token', refresh_token: first.refresh_token! });
      assert.equal(reuse.status, 400);
      assert.equal(reuse.body.error, 'invalid_grant');
      // Reuse signals theft: the rotated token of the same family is revoked too.
      const after = await tokenRequest(server, { grant_type: 'refresh_token', refresh_token: second.body.refresh_token });
      assert.equal(after.body.error, 'invalid_grant');
    });

    test('refresh after the membership was removed → invalid_grant', async () => {
      const p = await createProject(server, 'Removed member');
      const member = await createMember(server, p.projectId);
      const tokens = await loginTokens(server, member.email, member.password, { scope: 'openid offline_access' });
      assert.equal((await server.fhir('DELETE', `/ProjectMembership/${member.membershipId}`, { token: server.adminToken })).status, 200);
      const res = await tokenRequest(server, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! });
      assert.equal(res.status, 400);
      assert.equal(res.body.error, 'invalid_grant');
      const login = await server.request('POST', '/auth/login', {
        body: { email: member.email, password: member.password },
        contentType: 'application/json',
        token: null,
      });
      assert.equal(login.status, 400, login.text);
    });

    test('unknown refresh token → invalid_grant', async () => {
      const res = await tokenRequest(server, { grant_type: 'refresh_token', refresh_token: 'no-such-token' });
      assert.equal(res.status, 400);
      assert.equal(res.body.error, 'invalid_grant');
    });

    test('client credentials via body and via HTTP Basic; wrong secret → invalid_client', async () => {
      const p = await createProject(server, 'Clients');
      const client = await createClient(server, p.projectId, { token: p.adminToken, name: 'Lab interface' });
      assert.equal(client.client.resourceType, 'ClientApplication');
      assert.equal(client.client.name, 'Lab interface');
      for (const via of ['body', 'basic'] as const) {
        const tokens = await clientCredentialsToken(server, client.clientId, client.secret, via);
        assert.equal(tokens.project.reference, `Project/${p.projectId}`);
        assert.equal(tokens.refresh_token, undefined);
        const created = await server.fhir('POST', '/Patient', { token: tokens.access_token, body: { resourceType: 'Patient' } });
        assert.equal(created.status, 201, created.text);
        assert.equal(created.body.meta.project, p.projectId);
      }
      const wrong = await tokenRequest(server, { grant_type: 'client_credentials', client_id: client.clientId, client_secret: 'nope' });
      assert.equal(wrong.status, 401);
      assert.equal(wrong.body.error, 'invalid_client');
      const basic = `Basic ${Buffer.from(`${client.clientId}:nope`).toString('base64')}`;
      const wrongBasic = await tokenRequest(server, { grant_type: 'client_credentials' }, { authorization: basic });
      assert.equal(wrongBasic.body.error, 'invalid_client');
      const unknown = await tokenRequest(server, { grant_type: 'client_credentials', client_id: 'nope', client_secret: 'nope' });
      assert.equal(unknown.body.error, 'invalid_client');
    });

    test('the client secret is shown only on creation', async () => {
      const p = await createProject(server, 'Secret once');
      const client = await createClient(server, p.projectId);
      const read = await server.fhir('GET', `/ClientApplication/${client.clientId}`, { token: server.adminToken });
      assert.equal(read.status, 200, read.text);
      assert.equal(read.body.secret, undefined);
      assert.ok(!read.text.includes(client.secret));
    });

    test('unsupported grant type and missing grant type', async () => {
      const res = await tokenRequest(server, { grant_type: 'password', username: 'a', password: 'b' });
      assert.equal(res.status, 400);
      assert.equal(res.body.error, 'unsupported_grant_type');
      const none = await tokenRequest(server, {});
      assert.equal(none.status, 400);
      assert.equal(none.body.error, 'invalid_request');
    });

    test('GET /auth/me describes the session', async () => {
      const res = await server.request('GET', '/auth/me', { token: server.adminToken });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.user.email, admin.email);
      assert.equal(res.body.user.passwordHash, undefined);
      assert.equal(res.body.project.superAdmin, true);
      assert.equal(res.body.profile.resourceType, 'Practitioner');
      assert.equal(res.body.membership.admin, true);
    });

    test('discovery documents and JWKS; the JWKS verifies issued tokens', async () => {
      for (const path of ['/.well-known/smart-configuration', '/.well-known/openid-configuration']) {
        const res = await server.request('GET', path, { token: null });
        assert.equal(res.status, 200);
        assert.equal(res.body.issuer, server.baseUrl);
        assert.equal(res.body.token_endpoint, `${server.baseUrl}/oauth2/token`);
        assert.equal(res.body.authorization_endpoint, `${server.baseUrl}/oauth2/authorize`);
        assert.equal(res.body.jwks_uri, `${server.baseUrl}/.well-known/jwks.json`);
        assert.deepEqual(res.body.code_challenge_methods_supported, ['S256']);
        assert.ok(res.body.grant_types_supported.includes('client_credentials'));
      }
      const jwks = await server.request('GET', '/.well-known/jwks.json', { token: null });
      assert.equal(jwks.status, 200);
      assert.ok(jwks.body.keys.every((k: Record<string, unknown>) => k.d === undefined), 'no private key material');
      const { payload } = await jwtVerify(server.adminToken!, createLocalJWKSet(jwks.body), { issuer: server.baseUrl });
      assert.equal(payload.sadm, true);
    });

    test('/oauth2/authorize: unknown client → 400 OperationOutcome; registered redirect → login page', async () => {
      const bad = await server.request('GET', '/oauth2/authorize?response_type=code&client_id=nope&redirect_uri=https://evil.example', { token: null });
      assert.equal(bad.status, 400);
      assert.equal(ooText(bad.body), 'Unknown client_id');
      const p = await createProject(server, 'Browser app');
      const client = await createClient(server, p.projectId);
      const update = await server.fhir('PUT', `/ClientApplication/${client.clientId}`, {
        token: server.adminToken,
        body: { resourceType: 'ClientApplication', id: client.clientId, name: 'Browser app', redirectUri: 'https://app.example/cb' },
      });
      assert.equal(update.status, 200, update.text);
      const evil = await server.request('GET', `/oauth2/authorize?response_type=code&client_id=${client.clientId}&redirect_uri=https://evil.example`, { token: null });
      assert.equal(evil.status, 400);
      const page = await server.request(
        'GET',
        `/oauth2/authorize?response_type=code&client_id=${client.clientId}&redirect_uri=${encodeURIComponent('https://app.example/cb')}&state=xyz`,
        { token: null },
      );
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-type') ?? '', /text\/html/);
      assert.match(page.text, /Sign in/);
      // The secret survives the PUT (it is not part of the resource).
      assert.equal((await clientCredentialsToken(server, client.clientId, client.secret)).token_type, 'Bearer');
    });
  });
}
