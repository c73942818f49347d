import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createMember, createProject, drivers, ooText, startServer, tokenRequest, type ApiResponse, type TestProject, type TestServer } from './harness.js';

/**
 * Creating client applications (docs/auth.md#client-applications, issue 25 item 5): redirect URIs
 * at creation (before, a given `redirectUri` was silently dropped and the client had to be
 * PATCHed), public (PKCE-only, no secret) or confidential clients, and the scopes a client may
 * be granted, stored as `ClientApplication.scope`.
 */
for (const driver of drivers) {
  describe(`client applications (${driver})`, () => {
    let server: TestServer;
    let p: TestProject;
    before(async () => {
      server = await startServer(driver);
      p = await createProject(server, 'Apps');
    });
    after(() => server.stop());

    const create = (body: unknown, token: string | null = p.adminToken, projectId = p.projectId) =>
      server.request('POST', `/admin/projects/${projectId}/client`, { body, contentType: 'application/json', token });
    const authorize = (clientId: string, redirectUri: string) =>
      server.request('GET', `/oauth2/authorize?response_type=code&client_id=${clientId}&redirect_uri=${encodeURIComponent(redirectUri)}`, { token: null });
    const issues = (res: ApiResponse) => res.body.issue.map((i: { details: { text: string }; expression?: string[] }) => [i.details.text, i.expression?.[0]]);

    test('redirectUri and redirectUris given at creation are stored, and /oauth2/authorize accepts them', async () => {
      const res = await create({ name: 'Browser app', redirectUri: 'https://app.example/cb', redirectUris: ['https://app.example/other', 'com.example.app:/callback'] });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.body.redirectUri, 'https://app.example/cb');
      assert.deepEqual(res.body.redirectUris, ['https://app.example/other', 'com.example.app:/callback']);
      const read = await server.fhir('GET', `/ClientApplication/${res.body.id}`, { token: p.adminToken });
      assert.equal(read.body.redirectUri, 'https://app.example/cb');
      for (const uri of ['https://app.example/cb', 'https://app.example/other', 'com.example.app:/callback']) {
        const page = await authorize(res.body.id, uri);
        assert.equal(page.status, 200, `${uri}: ${page.text.slice(0, 200)}`);
      }
      assert.equal(ooText((await authorize(res.body.id, 'https://evil.example/cb')).body), 'redirect_uri is not registered for this client');
    });

    test('scope: the scopes the client may be granted, stored normalised as ClientApplication.scope', async () => {
      const res = await create({ name: 'Scoped', scope: ' openid  fhirUser launch/patient patient/Observation.rs?category=laboratory system/*.read openid ' });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.body.scope, 'openid fhirUser launch/patient patient/Observation.rs?category=laboratory system/*.read');
      const read = await server.fhir('GET', `/ClientApplication/${res.body.id}`, { token: server.adminToken });
      assert.equal(read.body.scope, res.body.scope);
      // A super admin's read-modify-write through REST keeps it (the element is part of the definition).
      const { meta: _meta, ...content } = read.body;
      const put = await server.fhir('PUT', `/ClientApplication/${res.body.id}`, { token: server.adminToken, body: { ...content, scope: 'system/Patient.read' } });
      assert.equal(put.status, 200, put.text);
      assert.equal(put.body.scope, 'system/Patient.read');
    });

    test('a confidential client (the default): a secret and a membership, client_credentials works', async () => {
      const res = await create({ name: 'Backend' });
      assert.equal(res.status, 201, res.text);
      assert.equal(typeof res.body.secret, 'string');
      assert.equal(res.body.public, undefined);
      const token = await tokenRequest(server, { grant_type: 'client_credentials', client_id: res.body.id, client_secret: res.body.secret });
      assert.equal(token.status, 200, token.text);
      assert.equal(token.body.project.reference, `Project/${p.projectId}`);
    });

    test('a public client: no secret, no membership; rotating its secret is refused', async () => {
      const res = await create({ name: 'SPA', public: true, redirectUris: ['https://spa.example/cb'] });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.body.public, true);
      assert.equal(res.body.secret, undefined);
      const members = await server.request('GET', `/admin/projects/${p.projectId}/members`, { token: p.adminToken });
      assert.ok(!members.text.includes(`ClientApplication/${res.body.id}`), 'a public client has no membership');
      const cc = await tokenRequest(server, { grant_type: 'client_credentials', client_id: res.body.id, client_secret: 'anything' });
      assert.equal(cc.status, 401);
      assert.equal(cc.body.error, 'invalid_client');
      const rotate = await server.request('POST', `/admin/projects/${p.projectId}/client/${res.body.id}/secret`, { body: {}, contentType: 'application/json', token: p.adminToken });
      assert.equal(rotate.status, 400, rotate.text);
      assert.equal(ooText(rotate.body), 'A public client has no secret');
      const withPkce = await server.request('GET', `/oauth2/authorize?response_type=code&client_id=${res.body.id}&redirect_uri=${encodeURIComponent('https://spa.example/cb')}&code_challenge=${'a'.repeat(43)}&code_challenge_method=S256`, { token: null });
      assert.equal(withPkce.status, 200, withPkce.text.slice(0, 200));
    });

    test('a public client must use PKCE: the authorize page refuses it without code_challenge, the token endpoint a code issued without one', async () => {
      const spa = await create({ name: 'PKCE SPA', public: true, redirectUris: ['https://pkce.example/cb'] });
      assert.equal(spa.status, 201, spa.text);
      const page = await authorize(spa.body.id, 'https://pkce.example/cb');
      assert.equal(page.status, 400, page.text.slice(0, 200));
      assert.equal(ooText(page.body), 'A public client must use PKCE (code_challenge)');
      assert.deepEqual(page.body.issue[0].expression, ['code_challenge']);
      // A login that names the public client but sends no challenge gets a code the token endpoint refuses.
      const member = await createMember(server, p.projectId);
      const login = await server.request('POST', '/auth/login', {
        body: { email: member.email, password: member.password, projectId: p.projectId, clientId: spa.body.id },
        contentType: 'application/json',
        token: null,
      });
      assert.equal(login.status, 200, login.text);
      const refused = await tokenRequest(server, { grant_type: 'authorization_code', code: login.body.code, client_id: spa.body.id });
      assert.equal(refused.status, 400, refused.text);
      assert.deepEqual(refused.body, { error: 'invalid_grant', error_description: 'A public client must use PKCE' });
    });

    test('invalid fields: every problem in one 400 with its text and expression; nothing is created', async () => {
      const before = (await server.app.db.query<{ n: number }>("SELECT count(*)::int AS n FROM resource WHERE resource_type = 'ClientApplication'")).rows[0].n;
      const res = await create({
        name: ' ',
        redirectUri: 'not a uri',
        redirectUris: ['https://ok.example/cb', 'https://frag.example/cb#x', 42],
        scope: 'openid patient/Observation.frobnicate',
        public: 'yes',
        description: 7,
      });
      assert.equal(res.status, 400, res.text);
      assert.deepEqual(issues(res), [
        ['Missing name', 'name'],
        ['description must be a string', 'description'],
        ['Invalid redirect URI: not a uri', 'redirectUri'],
        ['Invalid redirect URI: https://frag.example/cb#x', 'redirectUris[1]'],
        ['Invalid redirect URI: 42', 'redirectUris[2]'],
        ['Invalid scope: patient/Observation.frobnicate', 'scope'],
        ['public must be a boolean', 'public'],
      ]);
      assert.deepEqual(issues(await create({ name: 'x', redirectUris: 'https://a.example/cb' })), [['redirectUris must be an array of URIs', 'redirectUris']]);
      assert.deepEqual(issues(await create({ name: 'x', scope: ['openid'] })), [['scope must be a string of space-separated scopes', 'scope']]);
      assert.deepEqual(issues(await create({ name: 'x', redirectUri: 'javascript:alert(1)' })), [['Invalid redirect URI: javascript:alert(1)', 'redirectUri']]);
      const after = (await server.app.db.query<{ n: number }>("SELECT count(*)::int AS n FROM resource WHERE resource_type = 'ClientApplication'")).rows[0].n;
      assert.equal(after, before);
    });

    test('who may create: 401, 403 for members and other projects’ admins, 404 for an unknown project (super admin)', async () => {
      const member = await createMember(server, p.projectId);
      const other = await createProject(server, 'Other apps');
      assert.equal((await create({ name: 'x' }, null)).status, 401);
      assert.equal(ooText((await create({ name: 'x' }, member.token)).body), 'Forbidden');
      assert.equal(ooText((await create({ name: 'x' }, other.adminToken)).body), 'Forbidden');
      const unknown = await create({ name: 'x' }, server.adminToken, 'no-such-project');
      assert.equal(unknown.status, 404, unknown.text);
      assert.equal(ooText(unknown.body), 'Not found');
    });
  });
}
