import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createProject, drivers, ooText, pkcePair, startServer, tokenRequest, type ApiResponse, type TestProject, type TestServer, createMember } from './harness.js';
import { createSmartClient } from './support/smart.js';

/**
 * Client authentication at the token endpoint (docs/auth.md#client-authentication, RFC 6749
 * §2.3 and §4.1.3): a confidential client's code (and refresh token) is redeemed only with its
 * secret, a code is bound to its client and redirect URI, a first-party login's code (no client)
 * works without one; refresh tokens only with `offline_access`/`online_access`.
 */
for (const driver of drivers) {
  describe(`token endpoint client authentication (${driver})`, () => {
    let server: TestServer;
    let clinic: TestProject;
    let app: { clientId: string; secret: string };
    const redirectUri = 'https://app.example/callback';
    before(async () => {
      server = await startServer(driver);
      clinic = await createProject(server, 'Client auth clinic');
      app = await createSmartClient(server, clinic.projectId, { redirectUri });
    });
    after(() => server.stop());

    const basic = (id: string, secret: string) => ({ authorization: `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}` });

    /** A code issued to the confidential app for a new member (as the sign-in page asks for it). */
    async function appCode(extra: Record<string, unknown> = {}) {
      const member = await createMember(server, clinic.projectId);
      const res = await server.request('POST', '/auth/login', {
        body: { email: member.email, password: member.password, clientId: app.clientId, redirectUri, scope: 'openid offline_access', ...extra },
        contentType: 'application/json',
        token: null,
      });
      assert.equal(res.status, 200, res.text);
      return res.body.code as string;
    }

    function assertInvalidClient(res: ApiResponse, description: string, basicScheme: boolean) {
      assert.equal(res.status, 401, res.text);
      assert.deepEqual(res.body, { error: 'invalid_client', error_description: description });
      if (basicScheme) assert.match(res.headers.get('www-authenticate') ?? '', /^Basic realm=/);
      else assert.equal(res.headers.get('www-authenticate'), null);
    }

    test('a confidential client’s code without a secret, or with a wrong one, is invalid_client (401); with it → 200', async () => {
      const none = await tokenRequest(server, { grant_type: 'authorization_code', code: await appCode(), redirect_uri: redirectUri });
      assertInvalidClient(none, 'Missing client credentials', false);
      const idOnly = await tokenRequest(server, { grant_type: 'authorization_code', code: await appCode(), redirect_uri: redirectUri, client_id: app.clientId });
      assertInvalidClient(idOnly, 'Missing client credentials', false);
      const wrongPost = await tokenRequest(server, {
        grant_type: 'authorization_code',
        code: await appCode(),
        redirect_uri: redirectUri,
        client_id: app.clientId,
        client_secret: 'wrong',
      });
      assertInvalidClient(wrongPost, 'Invalid client credentials', false);
      const wrongBasic = await tokenRequest(server, { grant_type: 'authorization_code', code: await appCode(), redirect_uri: redirectUri }, basic(app.clientId, 'wrong'));
      assertInvalidClient(wrongBasic, 'Invalid client credentials', true);

      const post = await tokenRequest(server, {
        grant_type: 'authorization_code',
        code: await appCode(),
        redirect_uri: redirectUri,
        client_id: app.clientId,
        client_secret: app.secret,
      });
      assert.equal(post.status, 200, post.text);
      const viaBasic = await tokenRequest(server, { grant_type: 'authorization_code', code: await appCode(), redirect_uri: redirectUri }, basic(app.clientId, app.secret));
      assert.equal(viaBasic.status, 200, viaBasic.text);

      // Its refresh token too is the client's: without the secret → invalid_client; with it → 200.
      const noSecret = await tokenRequest(server, { grant_type: 'refresh_token', refresh_token: viaBasic.body.refresh_token });
      assertInvalidClient(noSecret, 'Missing client credentials', false);
      const refreshed = await tokenRequest(server, { grant_type: 'refresh_token', refresh_token: post.body.refresh_token }, basic(app.clientId, app.secret));
      assert.equal(refreshed.status, 200, refreshed.text);
    });

    test('a code is bound to its client and its redirect URI', async () => {
      const other = await createSmartClient(server, clinic.projectId, { redirectUri });
      const stolen = await tokenRequest(server, { grant_type: 'authorization_code', code: await appCode(), redirect_uri: redirectUri }, basic(other.clientId, other.secret));
      assert.equal(stolen.status, 400, stolen.text);
      assert.deepEqual(stolen.body, { error: 'invalid_grant', error_description: 'Code was issued to another client' });

      const elsewhere = await tokenRequest(
        server,
        { grant_type: 'authorization_code', code: await appCode(), redirect_uri: 'https://app.example/other' },
        basic(app.clientId, app.secret),
      );
      assert.equal(elsewhere.status, 400, elsewhere.text);
      assert.deepEqual(elsewhere.body, { error: 'invalid_grant', error_description: 'redirect_uri does not match the authorization request' });
      const missing = await tokenRequest(server, { grant_type: 'authorization_code', code: await appCode() }, basic(app.clientId, app.secret));
      assert.equal(missing.status, 400, missing.text);
      assert.equal(missing.body.error_description, 'redirect_uri does not match the authorization request');

      // The sign-in page cannot ask for a code for a redirect URI the client did not register.
      const member = await createMember(server, clinic.projectId);
      const unregistered = await server.request('POST', '/auth/login', {
        body: { email: member.email, password: member.password, clientId: app.clientId, redirectUri: 'https://evil.example/cb' },
        contentType: 'application/json',
        token: null,
      });
      assert.equal(unregistered.status, 400, unregistered.text);
      assert.equal(ooText(unregistered.body), 'redirect_uri is not registered for this client');
    });

    test('client_credentials with a wrong secret is 401 invalid_client (with WWW-Authenticate for Basic)', async () => {
      assertInvalidClient(await tokenRequest(server, { grant_type: 'client_credentials', client_id: app.clientId, client_secret: 'nope' }), 'Invalid client credentials', false);
      assertInvalidClient(await tokenRequest(server, { grant_type: 'client_credentials' }, basic(app.clientId, 'nope')), 'Invalid client credentials', true);
      assertInvalidClient(await tokenRequest(server, { grant_type: 'client_credentials' }), 'Missing client credentials', false);
    });

    test('a first-party login (no client) redeems its code without client credentials, as the README does', async () => {
      const member = await createMember(server, clinic.projectId);
      const login = await server.request('POST', '/auth/login', { body: { email: member.email, password: member.password }, contentType: 'application/json', token: null });
      const tokens = await tokenRequest(server, { grant_type: 'authorization_code', code: login.body.code });
      assert.equal(tokens.status, 200, tokens.text);
    });

    test('refresh tokens only with offline_access or online_access requested and granted', async () => {
      const member = await createMember(server, clinic.projectId);
      const tokensFor = async (scope: string | undefined) => {
        const pkce = pkcePair();
        const login = await server.request('POST', '/auth/login', {
          body: { email: member.email, password: member.password, scope, codeChallenge: pkce.challenge, codeChallengeMethod: 'S256' },
          contentType: 'application/json',
          token: null,
        });
        const res = await tokenRequest(server, { grant_type: 'authorization_code', code: login.body.code, code_verifier: pkce.verifier });
        assert.equal(res.status, 200, res.text);
        return res.body;
      };
      assert.equal((await tokensFor(undefined)).refresh_token, undefined);
      assert.equal((await tokensFor('openid')).refresh_token, undefined);
      const offline = await tokensFor('openid offline_access');
      assert.equal(typeof offline.refresh_token, 'string');
      assert.equal(offline.scope, 'openid offline_access');
      assert.equal(typeof (await tokensFor('openid online_access')).refresh_token, 'string');
      // A refresh that narrows the scope without offline_access gets no new refresh token.
      const narrowed = await tokenRequest(server, { grant_type: 'refresh_token', refresh_token: offline.refresh_token, scope: 'openid' });
      assert.equal(narrowed.status, 200, narrowed.text);
      assert.equal(narrowed.body.refresh_token, undefined);
      // Not granted (a client not registered for it) → no refresh token.
      const narrowApp = await createSmartClient(server, clinic.projectId, { redirectUri, scope: 'openid' });
      const login = await server.request('POST', '/auth/login', {
        body: { email: member.email, password: member.password, clientId: narrowApp.clientId, redirectUri, scope: 'openid offline_access' },
        contentType: 'application/json',
        token: null,
      });
      const res = await tokenRequest(server, { grant_type: 'authorization_code', code: login.body.code, redirect_uri: redirectUri }, basic(narrowApp.clientId, narrowApp.secret));
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.scope, 'openid');
      assert.equal(res.body.refresh_token, undefined);
    });
  });
}
