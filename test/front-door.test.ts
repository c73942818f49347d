import assert from 'node:assert/strict';
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { SignJWT, decodeJwt, decodeProtectedHeader, importJWK, type JWK } from 'jose';
import { answerCacheHits } from '../src/terminology/operations/answer-cache.js';
import { createMember, createProject, drivers, ooText, startServer, type TestServer } from './harness.js';

/**
 * What every request pays, kept cheap for a request asked again (docs/benchmarks.md, the front
 * door): the token a connection sent before is not verified again, a request line read before is
 * not classified again, the request's logger is made only when it logs. Each check a request
 * must pass still runs: these tests send their requests on one kept-alive connection (asserted),
 * where the kept readings are used.
 */
interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** The request went on a connection that had carried an earlier one. */
  reused: boolean;
}

function oneConnection(base: string): { send(method: string, path: string, headers?: Record<string, string>): Promise<Answer>; close(): void } {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  return {
    send: (method, path, headers = {}) =>
      new Promise((resolve, reject) => {
        const req = httpRequest(`${base}${path}`, { method, headers, agent }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text, reused: req.reusedSocket }));
        });
        req.on('error', reject);
        req.end();
      }),
    close: () => agent.destroy(),
  };
}

for (const driver of drivers) {
  describe(`front door: what a request asked again still passes through (${driver})`, () => {
    let server: TestServer;
    let base: string;
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
    const CS = 'http://example.org/fhir/CodeSystem/front-door';
    const lookupPath = `/fhir/R4/CodeSystem/$lookup?system=${CS}&code=a`;

    before(async () => {
      server = await startServer(driver);
      base = server.baseUrl;
      const cs = { resourceType: 'CodeSystem', id: 'front-door', url: CS, status: 'active', content: 'complete', concept: [{ code: 'a', display: 'Ay' }] };
      const put = await server.fhir('PUT', '/CodeSystem/front-door', { body: cs, token: server.adminToken });
      assert.ok(put.status === 200 || put.status === 201, put.text);
    });
    after(() => server.stop());

    /** The admin token's claims signed again with the server's key, with `changes`. */
    async function forge(changes: Record<string, unknown>): Promise<string> {
      const row = (await server.app.db.query<{ private_jwk: string }>('SELECT private_jwk FROM auth_signing_key WHERE active')).rows[0];
      const header = decodeProtectedHeader(server.adminToken!);
      return new SignJWT({ ...decodeJwt(server.adminToken!), ...changes })
        .setProtectedHeader({ alg: 'ES256', kid: header.kid, typ: header.typ })
        .sign(await importJWK(JSON.parse(row.private_jwk) as JWK, 'ES256'));
    }

    test('a token accepted on a connection is refused on it once it has expired', async () => {
      const exp = Math.floor(Date.now() / 1000) + 2;
      const token = await forge({ exp });
      const c = oneConnection(base);
      try {
        assert.equal((await c.send('GET', '/fhir/R4/Patient', bearer(token))).status, 200);
        const again = await c.send('GET', '/fhir/R4/Patient', bearer(token));
        assert.equal(again.status, 200);
        assert.ok(again.reused, 'the same connection');
        while (Date.now() <= exp * 1000 + 100) await new Promise((r) => setTimeout(r, 200));
        const expired = await c.send('GET', lookupPath, bearer(token));
        assert.ok(expired.reused, 'the same connection');
        assert.equal(expired.status, 401, expired.text);
        assert.equal(ooText(JSON.parse(expired.text)), 'Unauthorized');
      } finally {
        c.close();
      }
    });

    test('another Authorization header on the same connection is verified anew', async () => {
      const c = oneConnection(base);
      try {
        assert.equal((await c.send('GET', lookupPath, bearer(server.adminToken!))).status, 200);
        const [h, , s] = server.adminToken!.split('.');
        const tampered = `${h}.${Buffer.from(JSON.stringify({ ...decodeJwt(server.adminToken!), sadm: false, project: 'elsewhere' })).toString('base64url')}.${s}`;
        for (const authorization of [`Bearer ${tampered}`, 'Bearer a b', `Basic ${server.adminToken}`, '']) {
          const res = await c.send('GET', lookupPath, authorization ? { authorization } : {});
          assert.ok(res.reused, 'the same connection');
          assert.equal(res.status, 401, `${authorization.slice(0, 12)}…: ${res.text}`);
        }
        assert.equal((await c.send('GET', lookupPath, bearer(server.adminToken!))).status, 200);
      } finally {
        c.close();
      }
    });

    test('a kept answer on one connection: a removed membership is 401 at once, a policy given is followed at once', async () => {
      const p = await createProject(server, 'Front door');
      const removed = await createMember(server, p.projectId);
      const limited = await createMember(server, p.projectId);
      const patient = await server.fhir('POST', '/Patient', { token: p.adminToken, body: { resourceType: 'Patient', name: [{ family: 'Door' }] } });
      assert.equal(patient.status, 201, patient.text);
      const cs = await server.fhir('POST', '/CodeSystem', { token: p.adminToken, body: { resourceType: 'CodeSystem', url: CS, status: 'active', content: 'complete', concept: [{ code: 'a' }] } });
      assert.equal(cs.status, 201, cs.text);
      const c = oneConnection(base);
      try {
        const hits = answerCacheHits();
        for (let i = 0; i < 3; i++) assert.equal((await c.send('GET', lookupPath, bearer(removed.token))).status, 200);
        assert.ok(answerCacheHits() > hits, 'the third is the kept answer');
        for (let i = 0; i < 3; i++) assert.equal((await c.send('GET', `/fhir/R4/Patient/${patient.body.id}`, bearer(limited.token))).status, 200);

        const gone = await server.fhir('DELETE', `/ProjectMembership/${removed.membershipId}`, { token: server.adminToken });
        assert.equal(gone.status, 200, gone.text);
        const refused = await c.send('GET', lookupPath, bearer(removed.token));
        assert.ok(refused.reused, 'the same connection');
        assert.equal(refused.status, 401, refused.text);

        const policy = await server.fhir('POST', '/AccessPolicy', { token: p.adminToken, body: { resourceType: 'AccessPolicy', resource: [{ resourceType: 'Observation' }] } });
        assert.equal(policy.status, 201, policy.text);
        const path = `/admin/projects/${p.projectId}/members/${limited.membershipId}`;
        const stored = await server.request('GET', path, { token: p.adminToken });
        const set = await server.request('POST', path, { token: p.adminToken, body: { ...stored.body, accessPolicy: { reference: `AccessPolicy/${policy.body.id}` } }, contentType: 'application/json' });
        assert.equal(set.status, 200, set.text);
        const read = await c.send('GET', `/fhir/R4/Patient/${patient.body.id}`, bearer(limited.token));
        assert.ok(read.reused, 'the same connection');
        assert.equal(read.status, 403, read.text);
      } finally {
        c.close();
      }
    });

    test('a kept answer and a cached read carry the request id, CORS headers, their format and validators', async () => {
      const c = oneConnection(base);
      const patient = await server.fhir('POST', '/Patient', { token: server.adminToken, body: { resourceType: 'Patient', name: [{ family: 'Headers' }] } });
      try {
        for (const path of [lookupPath, `/fhir/R4/Patient/${patient.body.id}`]) {
          for (let i = 0; i < 3; i++) await c.send('GET', path, bearer(server.adminToken!));
          const res = await c.send('GET', path, { ...bearer(server.adminToken!), origin: 'https://app.example.org', 'x-request-id': `door-${path.length}` });
          assert.equal(res.status, 200, res.text);
          assert.equal(res.headers['x-request-id'], `door-${path.length}`);
          assert.equal(res.headers['access-control-allow-origin'], '*');
          assert.match(String(res.headers['access-control-expose-headers']), /X-Request-Id/);
          assert.equal(res.headers['content-type'], 'application/fhir+json; charset=utf-8');
          const own = await c.send('GET', path, bearer(server.adminToken!));
          assert.match(String(own.headers['x-request-id']), /^[0-9a-f-]{36}$/, 'a new id when none is sent');
          const pretty = await c.send('GET', `${path}&_pretty=true`.replace(/(Patient\/[^&]+)&/, '$1?'), bearer(server.adminToken!));
          assert.equal(pretty.status, 200, pretty.text);
          assert.ok(pretty.text.includes('\n  "'), 'pretty-printed');
          const xml = await c.send('GET', path, { ...bearer(server.adminToken!), accept: 'application/fhir+xml' });
          assert.equal(xml.status, 406, xml.text);
          const head = await c.send('HEAD', path, bearer(server.adminToken!));
          assert.equal(head.status, 200);
          assert.equal(head.text, '');
        }
        const read = await c.send('GET', `/fhir/R4/Patient/${patient.body.id}`, bearer(server.adminToken!));
        assert.equal(read.headers.etag, 'W/"1"');
        assert.ok(read.headers['last-modified']);
        const current = await c.send('GET', `/fhir/R4/Patient/${patient.body.id}`, { ...bearer(server.adminToken!), 'if-none-match': 'W/"1"' });
        assert.equal(current.status, 304);
        assert.equal(current.text, '');
      } finally {
        c.close();
      }
    });

    test('a request line read before is checked again for each request that uses it', async () => {
      const c = oneConnection(base);
      try {
        for (let i = 0; i < 2; i++) {
          assert.equal((await c.send('GET', '/fhir/R4/Patient/not%2Fan-id', bearer(server.adminToken!))).status, 400);
          assert.equal((await c.send('GET', '/fhir/R4/Nothing/1', bearer(server.adminToken!))).status, 404);
          assert.equal((await c.send('GET', '/fhir/R4/metadata', {})).status, 200, 'public');
          const deleteMetadata = await c.send('DELETE', '/fhir/R4/metadata', bearer(server.adminToken!));
          assert.equal(deleteMetadata.status, 405, deleteMetadata.text);
          assert.equal(deleteMetadata.headers.allow, 'GET, HEAD');
          assert.equal((await c.send('GET', '/fhir/R4/Patient?_format=xml', bearer(server.adminToken!))).status, 406);
          assert.equal((await c.send('GET', '/fhir/R4/Patient', {})).status, 401);
        }
      } finally {
        c.close();
      }
    });
  });
}
