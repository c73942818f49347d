import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { createMember, createProject, drivers, loginTokens, ooText, startServer, type TestServer } from './harness.js';

/**
 * Binary over REST (issue 34, docs/rest.md#binary): content in with any type, out as its own
 * type or as FHIR JSON, versions, ranges, safe headers, tenancy, signed URLs, and an upload that
 * is cut off or too large leaving nothing behind.
 */

/** A raw request: `body` sent as is with `contentType`. */
async function raw(server: TestServer, method: string, path: string, options: { body?: Buffer | string; contentType?: string; headers?: Record<string, string>; token?: string | null } = {}) {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  const token = options.token === undefined ? server.memberToken : options.token;
  if (token) headers.authorization = `Bearer ${token}`;
  if (options.contentType) headers['content-type'] = options.contentType;
  const res = await fetch(server.fhirUrl + path, { method, headers, body: options.body as BodyInit | undefined });
  const bytes = Buffer.from(await res.arrayBuffer());
  let json: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON off the wire
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, bytes, json };
}

/** Rows of staged (not yet taken) content, straight from the database. */
async function stagedRows(server: TestServer): Promise<number> {
  const res = await server.app.db.query<{ n: number }>('SELECT count(*)::int AS n FROM binary_content WHERE NOT stored');
  return res.rows[0].n;
}

for (const driver of drivers) {
  describe(`Binary (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver, { env: { LATTICE_BINARY_LIMIT: String(3 * 1024 * 1024), LATTICE_BODY_LIMIT: String(64 * 1024) } });
    });
    after(() => server.stop());

    test('POST with any content type stores the body as content; a read without FHIR Accept answers the bytes with safe headers', async () => {
      const created = await raw(server, 'POST', '/Binary', { body: 'hello, file', contentType: 'text/plain; charset=utf-8', headers: { 'x-security-context': 'Patient/example' } });
      assert.equal(created.status, 201, created.bytes.toString());
      assert.equal(created.json.resourceType, 'Binary');
      assert.equal(created.json.contentType, 'text/plain; charset=utf-8');
      assert.deepEqual(created.json.securityContext, { reference: 'Patient/example' });
      assert.equal(created.json.data, undefined);
      assert.match(created.headers.get('location') ?? '', new RegExp(`/Binary/${created.json.id}/_history/1$`));

      const read = await raw(server, 'GET', `/Binary/${created.json.id}`, { headers: { accept: 'text/plain' } });
      assert.equal(read.status, 200);
      assert.equal(read.bytes.toString(), 'hello, file');
      assert.equal(read.headers.get('content-type'), 'text/plain; charset=utf-8');
      assert.equal(read.headers.get('content-length'), '11');
      assert.equal(read.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(read.headers.get('etag'), '"1"');
      assert.equal(read.headers.get('content-disposition'), 'inline');
    });

    test('Accept FHIR JSON (or _format=json) answers the Binary resource with base64 data', async () => {
      const bytes = Buffer.from([0, 1, 2, 250, 251, 252, 253, 254, 255]);
      const created = await raw(server, 'POST', '/Binary', { body: bytes, contentType: 'application/octet-stream' });
      assert.equal(created.status, 201);
      const json = await raw(server, 'GET', `/Binary/${created.json.id}`, { headers: { accept: 'application/fhir+json' } });
      assert.equal(json.status, 200);
      assert.equal(json.headers.get('content-type'), 'application/fhir+json; charset=utf-8');
      assert.equal(json.json.data, bytes.toString('base64'));
      assert.equal(json.headers.get('etag'), 'W/"1"');
      const format = await raw(server, 'GET', `/Binary/${created.json.id}?_format=json`, { headers: { accept: '*/*' } });
      assert.equal(format.json.data, bytes.toString('base64'));
      const rawRead = await raw(server, 'GET', `/Binary/${created.json.id}`, { headers: { accept: '*/*' } });
      assert.deepEqual(rawRead.bytes, bytes);
    });

    test('a FHIR JSON Binary with data is stored as content: read back raw and as JSON', async () => {
      const created = await server.fhir('POST', '/Binary', { body: { resourceType: 'Binary', contentType: 'text/csv', data: Buffer.from('a,b\n1,2\n').toString('base64') } });
      assert.equal(created.status, 201, created.text);
      const rawRead = await raw(server, 'GET', `/Binary/${created.body.id}`, { headers: { accept: 'text/csv' } });
      assert.equal(rawRead.bytes.toString(), 'a,b\n1,2\n');
      assert.equal(rawRead.headers.get('content-disposition'), 'attachment');
      const json = await server.fhir('GET', `/Binary/${created.body.id}`, { headers: { accept: 'application/fhir+json' } });
      assert.equal(Buffer.from(json.body.data, 'base64').toString(), 'a,b\n1,2\n');
    });

    test('PUT makes a new version; vread and history reach every version, each with its own content', async () => {
      const created = await raw(server, 'POST', '/Binary', { body: 'version one', contentType: 'text/plain' });
      const id = created.json.id;
      const updated = await raw(server, 'PUT', `/Binary/${id}`, { body: 'version two!', contentType: 'text/plain', headers: { 'if-match': 'W/"1"' } });
      assert.equal(updated.status, 200, updated.bytes.toString());
      assert.equal(updated.json.meta.versionId, '2');
      const same = await raw(server, 'PUT', `/Binary/${id}`, { body: 'version two!', contentType: 'text/plain' });
      assert.equal(same.json.meta.versionId, '2', 'the same content again is no new version');
      const stale = await raw(server, 'PUT', `/Binary/${id}`, { body: 'three', contentType: 'text/plain', headers: { 'if-match': 'W/"1"' } });
      assert.equal(stale.status, 412);
      assert.equal((await raw(server, 'GET', `/Binary/${id}`)).bytes.toString(), 'version two!');
      assert.equal((await raw(server, 'GET', `/Binary/${id}/_history/1`)).bytes.toString(), 'version one');
      const v1json = await server.fhir('GET', `/Binary/${id}/_history/1`, { headers: { accept: 'application/fhir+json' } });
      assert.equal(Buffer.from(v1json.body.data, 'base64').toString(), 'version one');
      const history = await server.fhir('GET', `/Binary/${id}/_history`);
      assert.equal(history.status, 200);
      assert.deepEqual(history.body.entry.map((e: { resource: { meta: { versionId: string } } }) => e.resource.meta.versionId), ['2', '1']);
      assert.equal(await stagedRows(server), 0, 'the unchanged update left no staged content');
    });

    test('a PATCH or a JSON update without data changes the metadata and keeps the content', async () => {
      const created = await raw(server, 'POST', '/Binary', { body: 'kept content', contentType: 'text/plain' });
      const id = created.json.id;
      const patched = await server.fhir('PATCH', `/Binary/${id}`, {
        raw: JSON.stringify([{ op: 'add', path: '/securityContext', value: { reference: 'Patient/p1' } }]),
        contentType: 'application/json-patch+json',
      });
      assert.equal(patched.status, 200, patched.text);
      assert.equal(patched.body.meta.versionId, '2');
      assert.equal((await raw(server, 'GET', `/Binary/${id}`)).bytes.toString(), 'kept content');
      const { url: _url, ...asRead } = patched.body;
      const put = await server.fhir('PUT', `/Binary/${id}`, { body: { ...asRead, securityContext: { reference: 'Patient/p2' } } });
      assert.equal(put.status, 200, put.text);
      assert.equal(put.body.meta.versionId, '3');
      assert.equal((await raw(server, 'GET', `/Binary/${id}`)).bytes.toString(), 'kept content');
      assert.equal((await raw(server, 'GET', `/Binary/${id}/_history/1`)).bytes.toString(), 'kept content');
    });

    test('Range returns the slice (206), an unsatisfiable range 416, a stale If-Range the whole', async () => {
      const created = await raw(server, 'POST', '/Binary', { body: '0123456789', contentType: 'application/octet-stream' });
      const id = created.json.id;
      const slice = await raw(server, 'GET', `/Binary/${id}`, { headers: { range: 'bytes=2-5' } });
      assert.equal(slice.status, 206);
      assert.equal(slice.bytes.toString(), '2345');
      assert.equal(slice.headers.get('content-range'), 'bytes 2-5/10');
      assert.equal(slice.headers.get('content-length'), '4');
      assert.equal((await raw(server, 'GET', `/Binary/${id}`, { headers: { range: 'bytes=-3' } })).bytes.toString(), '789');
      const beyond = await raw(server, 'GET', `/Binary/${id}`, { headers: { range: 'bytes=10-' } });
      assert.equal(beyond.status, 416);
      assert.equal(beyond.headers.get('content-range'), 'bytes */10');
      const stale = await raw(server, 'GET', `/Binary/${id}`, { headers: { range: 'bytes=2-5', 'if-range': '"7"' } });
      assert.equal(stale.status, 200);
      assert.equal(stale.bytes.toString(), '0123456789');
    });

    test('HEAD answers the headers only; If-None-Match with the version answers 304', async () => {
      const created = await raw(server, 'POST', '/Binary', { body: 'head me', contentType: 'text/plain' });
      const head = await raw(server, 'HEAD', `/Binary/${created.json.id}`);
      assert.equal(head.status, 200);
      assert.equal(head.bytes.length, 0);
      assert.equal(head.headers.get('content-type'), 'text/plain');
      const unchanged = await raw(server, 'GET', `/Binary/${created.json.id}`, { headers: { 'if-none-match': '"1"' } });
      assert.equal(unchanged.status, 304);
      assert.equal(unchanged.bytes.length, 0);
    });

    test('a Binary with data in a transaction Bundle is stored as content; search answers Binaries without data, with their url', async () => {
      const bundle = await server.fhir('POST', '', {
        body: {
          resourceType: 'Bundle',
          type: 'transaction',
          entry: [{ resource: { resourceType: 'Binary', contentType: 'text/plain', data: Buffer.from('from a bundle').toString('base64') }, request: { method: 'POST', url: 'Binary' } }],
        },
      });
      assert.equal(bundle.status, 200, bundle.text);
      const id = /Binary\/([^/]+)/.exec(bundle.body.entry[0].response.location)?.[1];
      assert.equal((await raw(server, 'GET', `/Binary/${id}`)).bytes.toString(), 'from a bundle');
      const found = await server.fhir('GET', `/Binary?_id=${id}`);
      assert.equal(found.body.entry.length, 1);
      assert.equal(found.body.entry[0].resource.data, undefined);
      assert.match(found.body.entry[0].resource.url, new RegExp(`/binary/${id}/1\\?Expires=`));
      assert.equal(found.body.entry[0].resource._contentSha256, undefined);
    });

    test('HTML, SVG and JavaScript are served as downloads; images inline', async () => {
      for (const type of ['text/html', 'image/svg+xml', 'application/javascript', 'application/xml']) {
        const created = await raw(server, 'POST', '/Binary', { body: '<script>alert(1)</script>', contentType: type });
        const read = await raw(server, 'GET', `/Binary/${created.json.id}`);
        assert.equal(read.headers.get('content-type'), type);
        assert.equal(read.headers.get('content-disposition'), 'attachment', type);
        assert.equal(read.headers.get('x-content-type-options'), 'nosniff');
      }
      const png = await raw(server, 'POST', '/Binary?_filename=scan%201.png', { body: Buffer.from([137, 80, 78, 71]), contentType: 'image/png' });
      const read = await raw(server, 'GET', `/Binary/${png.json.id}`);
      assert.equal(read.headers.get('content-disposition'), `inline; filename="scan 1.png"; filename*=UTF-8''scan%201.png`);
    });

    test("another project's caller gets 404, raw and JSON, and cannot overwrite it", async () => {
      const created = await raw(server, 'POST', '/Binary', { body: 'private', contentType: 'text/plain' });
      const other = await createProject(server, 'Binary other project');
      for (const accept of ['*/*', 'application/fhir+json']) {
        const read = await raw(server, 'GET', `/Binary/${created.json.id}`, { token: other.adminToken, headers: { accept } });
        assert.equal(read.status, 404, accept);
      }
      const write = await raw(server, 'PUT', `/Binary/${created.json.id}`, { token: other.adminToken, body: 'stolen', contentType: 'text/plain' });
      assert.ok(write.status === 404 || write.status === 409, `got ${write.status}`);
      assert.equal((await raw(server, 'GET', `/Binary/${created.json.id}`)).bytes.toString(), 'private');
      assert.equal(await stagedRows(server), 0);
    });

    test('content over LATTICE_BINARY_LIMIT is refused with 413 and nothing is kept (Content-Length and chunked)', async () => {
      const before = (await server.fhir('GET', '/Binary?_summary=count')).body.total;
      const big = Buffer.alloc(3 * 1024 * 1024 + 1, 7);
      const sized = await raw(server, 'POST', '/Binary', { body: big, contentType: 'application/octet-stream' });
      assert.equal(sized.status, 413);
      assert.equal(ooText(sized.json), `Binary content larger than LATTICE_BINARY_LIMIT (${3 * 1024 * 1024} bytes)`);
      const chunked = await new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = httpRequest(`${server.fhirUrl}/Binary`, { method: 'POST', headers: { authorization: `Bearer ${server.memberToken}`, 'content-type': 'application/pdf' } }, (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += String(c)));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        });
        req.on('error', reject);
        let sent = 0;
        const pump = () => {
          while (sent < big.length) {
            sent += 256 * 1024;
            if (!req.write(big.subarray(sent - 256 * 1024, sent))) return void req.once('drain', pump);
          }
          req.end();
        };
        pump();
      }).catch((err: Error) => ({ status: -1, text: err.message }));
      assert.ok(chunked.status === 413 || chunked.status === -1, `got ${chunked.status}`);
      assert.equal((await server.fhir('GET', '/Binary?_summary=count')).body.total, before);
      assert.equal(await stagedRows(server), 0);
    });

    test('FHIR JSON of content over LATTICE_BODY_LIMIT is refused (406), pointing at the raw read', async () => {
      const created = await raw(server, 'POST', '/Binary', { body: Buffer.alloc(100 * 1024, 1), contentType: 'application/octet-stream' });
      assert.equal(created.status, 201);
      const json = await raw(server, 'GET', `/Binary/${created.json.id}`, { headers: { accept: 'application/fhir+json' } });
      assert.equal(json.status, 406);
      assert.equal(ooText(json.json), `Binary content of ${100 * 1024} bytes is larger than LATTICE_BODY_LIMIT (${64 * 1024} bytes) allows inside FHIR JSON: read it as its own content type (Accept: */*)`);
      assert.equal((await raw(server, 'GET', `/Binary/${created.json.id}`)).bytes.length, 100 * 1024);
    });

    test('an upload cut off mid-body leaves no Binary and no staged chunks', async () => {
      const before = (await server.fhir('GET', '/Binary?_summary=count')).body.total;
      await new Promise<void>((resolve) => {
        const req = httpRequest(`${server.fhirUrl}/Binary`, { method: 'POST', headers: { authorization: `Bearer ${server.memberToken}`, 'content-type': 'application/pdf', 'content-length': String(2 * 1024 * 1024) } });
        req.on('error', () => resolve());
        req.write(Buffer.alloc(1536 * 1024, 3), () => setTimeout(() => req.destroy(), 200));
        req.on('close', () => resolve());
      });
      // The server notices the closed connection and removes what it staged.
      for (let i = 0; i < 50 && (await stagedRows(server)) > 0; i++) await new Promise((r) => setTimeout(r, 100));
      assert.equal(await stagedRows(server), 0);
      assert.equal((await server.fhir('GET', '/Binary?_summary=count')).body.total, before);
    });

    test('Binary.url and attachment URLs are signed: fetched without a token, bound to file and project', async () => {
      const created = await raw(server, 'POST', '/Binary', { body: 'signed content', contentType: 'text/plain' });
      const signed: string = created.json.url;
      assert.match(signed, /\/binary\/[\w-]+\/1\?Expires=\d+&Signature=[\w-]+$/);
      const plain = await fetch(signed);
      assert.equal(plain.status, 200);
      assert.equal(await plain.text(), 'signed content');
      assert.equal(plain.headers.get('x-content-type-options'), 'nosniff');

      const otherFile = await raw(server, 'POST', '/Binary', { body: 'other file', contentType: 'text/plain' });
      const forged = await fetch(signed.replace(created.json.id, otherFile.json.id));
      assert.equal(forged.status, 403);
      assert.equal(ooText(await forged.json()), 'Invalid or expired signature');
      const expired = await fetch(signed.replace(/Expires=\d+/, 'Expires=1000'));
      assert.equal(expired.status, 403);

      // An attachment holder: read by whoever may read it, its url is a signed URL of the content.
      const doc = await server.fhir('POST', '/DocumentReference', {
        body: { resourceType: 'DocumentReference', status: 'current', content: [{ attachment: { contentType: 'text/plain', url: `Binary/${created.json.id}` } }] },
      });
      assert.equal(doc.status, 201, doc.text);
      const url: string = doc.body.content[0].attachment.url;
      assert.match(url, /\/binary\/[\w-]+\?Expires=\d+&Signature=[\w-]+$/);
      assert.equal(await (await fetch(url)).text(), 'signed content');
      // Written back as read, it is stored as the reference again.
      const again = await server.fhir('PUT', `/DocumentReference/${doc.body.id}`, { body: { ...doc.body, status: 'superseded' } });
      assert.equal(again.status, 200, again.text);
      const stored = await server.app.db.query<{ content: string }>("SELECT content FROM resource WHERE resource_type = 'DocumentReference' AND id = $1", [doc.body.id]);
      assert.equal(JSON.parse(stored.rows[0].content).content[0].attachment.url, `Binary/${created.json.id}`);

      // Another project's holder pointing at this project's Binary gets a URL that fetches nothing.
      const other = await createProject(server, 'Binary attachment thief');
      const theirs = await server.fhir('POST', '/DocumentReference', {
        token: other.adminToken,
        body: { resourceType: 'DocumentReference', status: 'current', content: [{ attachment: { url: `Binary/${created.json.id}` } }] },
      });
      assert.equal((await fetch(theirs.body.content[0].attachment.url)).status, 403);
    });

    test('scopes apply: Binary.r reads content but writes nothing; without a Binary scope no read', async () => {
      const created = await raw(server, 'POST', '/Binary', { body: 'scoped', contentType: 'text/plain' });
      const member = server.member!;
      const token = async (scope: string) => (await loginTokens(server, member.email, member.password, { projectId: server.projectId, scope })).access_token;
      const reader = await token('openid user/Binary.r');
      assert.equal((await raw(server, 'GET', `/Binary/${created.json.id}`, { token: reader })).bytes.toString(), 'scoped');
      const write = await raw(server, 'POST', '/Binary', { token: reader, body: 'no', contentType: 'text/plain' });
      assert.equal(write.status, 403);
      const other = await token('openid user/Patient.rs');
      for (const accept of ['*/*', 'application/fhir+json']) {
        assert.equal((await raw(server, 'GET', `/Binary/${created.json.id}`, { token: other, headers: { accept } })).status, 403, accept);
      }
      assert.equal(await stagedRows(server), 0);
    });

    test('a browser may upload and read ranges across origins (CORS preflight and exposed headers)', async () => {
      const preflight = await fetch(`${server.fhirUrl}/Binary`, {
        method: 'OPTIONS',
        headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'x-security-context, range' },
      });
      assert.equal(preflight.status, 204);
      assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /X-Security-Context.*Range/);
      const created = await raw(server, 'POST', '/Binary', { body: 'cors', contentType: 'text/plain' });
      const read = await raw(server, 'GET', `/Binary/${created.json.id}`, { headers: { origin: 'https://app.example', range: 'bytes=0-1' } });
      assert.match(read.headers.get('access-control-expose-headers') ?? '', /Content-Range, Content-Disposition/);
    });

    test('a member without Binary rights is refused before the body is read', async () => {
      const p = await createProject(server, 'Binary read-only');
      const policy = await server.fhir('POST', '/AccessPolicy', {
        token: p.adminToken,
        body: { resourceType: 'AccessPolicy', name: 'read only', resource: [{ resourceType: 'Binary', readonly: true }] },
      });
      assert.equal(policy.status, 201, policy.text);
      const member = await createMember(server, p.projectId);
      const membership = await server.fhir('GET', `/ProjectMembership/${member.membershipId}`, { token: server.adminToken });
      const updated = await server.fhir('PUT', `/ProjectMembership/${member.membershipId}`, {
        token: server.adminToken,
        body: { ...membership.body, accessPolicy: { reference: `AccessPolicy/${policy.body.id}` } },
      });
      assert.equal(updated.status, 200, updated.text);
      // The answer comes while the body is still being sent: it was not waited for.
      const refused = await new Promise<number>((resolve, reject) => {
        const req = httpRequest(`${server.fhirUrl}/Binary`, { method: 'POST', headers: { authorization: `Bearer ${member.token}`, 'content-type': 'text/plain', 'content-length': String(2 * 1024 * 1024) } }, (res) => {
          resolve(res.statusCode ?? 0);
          res.resume();
          req.destroy();
        });
        req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
        req.write(Buffer.alloc(64 * 1024, 1));
      });
      assert.equal(refused, 403);
      assert.equal(await stagedRows(server), 0);
    });
  });
}
