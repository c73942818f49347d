import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SignJWT, decodeJwt, decodeProtectedHeader, generateKeyPair, importJWK, type JWK } from 'jose';
import { drivers, ooText, startServer, type ApiResponse, type TestServer } from './harness.js';

/** Which tokens `/fhir/R4` and `/admin` accept (docs/auth.md, first bullet). */
for (const driver of drivers) {
  describe(`auth: bearer tokens (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver);
    });
    after(() => server.stop());

    /** Re-signs the admin token's claims with `changes`, using the server's own key. */
    async function forge(changes: Record<string, unknown>, key?: CryptoKey | Uint8Array): Promise<string> {
      const claims = { ...decodeJwt(server.adminToken!), ...changes };
      const header = decodeProtectedHeader(server.adminToken!);
      let signingKey = key;
      if (!signingKey) {
        const row = (await server.app.db.query<{ private_jwk: string }>('SELECT private_jwk FROM auth_signing_key WHERE active')).rows[0];
        signingKey = await importJWK(JSON.parse(row.private_jwk) as JWK, 'ES256');
      }
      return new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: header.kid, typ: header.typ }).sign(signingKey);
    }

    function assertUnauthorized(res: ApiResponse): void {
      assert.equal(res.status, 401, res.text);
      assert.equal(res.body.resourceType, 'OperationOutcome');
      assert.equal(res.body.issue[0].code, 'login');
      assert.equal(ooText(res.body), 'Unauthorized');
      assert.equal(res.headers.get('www-authenticate'), 'Bearer');
    }

    test('the admin token works (control for the cases below)', async () => {
      assert.equal((await server.fhir('GET', '/Patient')).status, 200);
      assert.equal((await server.fhir('GET', '/Patient', { token: await forge({}) })).status, 200, 'forging with the real key and unchanged claims works');
    });

    test('missing token → 401 with WWW-Authenticate: Bearer', async () => {
      assertUnauthorized(await server.fhir('GET', '/Patient', { token: null }));
      assertUnauthorized(await server.fhir('POST', '/Patient', { token: null, body: { resourceType: 'Patient' } }));
      assertUnauthorized(await server.request('POST', '/admin/projects/x/client', { token: null, body: { name: 'x' }, contentType: 'application/json' }));
    });

    test('malformed Authorization headers → 401', async () => {
      for (const authorization of ['Bearer', 'Basic abc', 'Bearer not.a.jwt', 'Bearer a b', `Token ${server.adminToken}`]) {
        assertUnauthorized(await server.fhir('GET', '/Patient', { token: null, headers: { authorization } }));
      }
    });

    test('expired token (signed with the real key) → 401', async () => {
      const now = Math.floor(Date.now() / 1000);
      assertUnauthorized(await server.fhir('GET', '/Patient', { token: await forge({ iat: now - 7200, exp: now - 3600 }) }));
    });

    test('token signed with another key (same kid) → 401', async () => {
      const { privateKey } = await generateKeyPair('ES256');
      assertUnauthorized(await server.fhir('GET', '/Patient', { token: await forge({}, privateKey) }));
    });

    test('alg: none token → 401', async () => {
      const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
      const header = { ...decodeProtectedHeader(server.adminToken!), alg: 'none' };
      const unsigned = `${b64(header)}.${b64(decodeJwt(server.adminToken!))}.`;
      assertUnauthorized(await server.fhir('GET', '/Patient', { token: unsigned }));
    });

    test('tampered payload (signature kept) → 401', async () => {
      const [h, , s] = server.adminToken!.split('.');
      const payload = { ...decodeJwt(server.adminToken!), project: 'some-other-project' };
      const tampered = `${h}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${s}`;
      assertUnauthorized(await server.fhir('GET', '/Patient', { token: tampered }));
    });

    test('token from another issuer or not an access token → 401', async () => {
      assertUnauthorized(await server.fhir('GET', '/Patient', { token: await forge({ iss: 'https://elsewhere.example' }) }));
      const claims = decodeJwt(server.adminToken!);
      const header = decodeProtectedHeader(server.adminToken!);
      const row = (await server.app.db.query<{ private_jwk: string }>('SELECT private_jwk FROM auth_signing_key WHERE active')).rows[0];
      const key = await importJWK(JSON.parse(row.private_jwk) as JWK, 'ES256');
      const idToken = await new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: header.kid, typ: 'JWT' }).sign(key);
      assertUnauthorized(await server.fhir('GET', '/Patient', { token: idToken }));
    });

    test('public routes need no token', async () => {
      assert.equal((await server.fhir('GET', '/metadata', { token: null })).status, 200);
      assert.equal((await server.request('GET', '/.well-known/jwks.json', { token: null })).status, 200);
      assert.equal((await server.request('GET', '/.well-known/smart-configuration', { token: null })).status, 200);
    });

    test('token claims carry the membership', async () => {
      const claims = decodeJwt(server.adminToken!);
      assert.equal(typeof claims.project, 'string');
      assert.equal(typeof claims.membership, 'string');
      assert.equal(typeof claims.login_id, 'string');
      assert.equal(claims.sadm, true);
      assert.equal(claims.padm, true);
      assert.match(String(claims.profile), /^Practitioner\//);
      assert.equal((claims.exp as number) - (claims.iat as number), 3600);
    });
  });
}
