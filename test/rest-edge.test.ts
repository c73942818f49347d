import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import type { OperationOutcomeIssue, Patient, Resource } from '@medplum/fhirtypes';
import type { ResourceHook } from '../src/core/repository.js';
import { drivers, ooText, startServer, type TestServer } from './harness.js';

// Edge cases of the FHIR REST surface (docs/errors.md, docs/rest.md): every client mistake is a 4xx
// OperationOutcome that says what is wrong; a server fault is the generic 500 and leaves
// nothing half-written; concurrent writes lose nothing. Tests marked "was 500" (or "was not an
// OperationOutcome") are regressions found by test/rest-fuzz.test.ts.

const ID_RULE = 'must be 1-64 characters of A-Z, a-z, 0-9, "-" and "."';
const SEARCH_TABLES = ['string', 'token', 'reference', 'date', 'number', 'uri', 'quantity'];

const patient = (family: string, extra: Record<string, unknown> = {}) => ({ resourceType: 'Patient', name: [{ family }], ...extra });

interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** A request sent byte for byte as written (fetch would normalize or re-encode the path). */
function rawRequest(server: TestServer, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<RawResponse> {
  const url = new URL(server.baseUrl);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: url.port, method, path, agent: false, headers: { authorization: `Bearer ${server.adminToken}`, ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Asserts an OperationOutcome answer with this status, issue code and first text. */
function assertOutcome(res: { status: number; text: string }, status: number, code: string, text: string): void {
  assert.equal(res.status, status, res.text);
  const body = JSON.parse(res.text);
  assert.equal(body.resourceType, 'OperationOutcome', res.text);
  assert.equal(body.issue[0].code, code, res.text);
  assert.equal(ooText(body), text);
}

const EXPLODE = 'explode';
const UNDELETABLE = 'undeletable';
const has = (r: Resource | undefined, value: string) =>
  (r as { identifier?: Array<{ value?: string }> } | undefined)?.identifier?.some((i) => i.value === value) ?? false;
const explodingHook: ResourceHook = {
  types: ['Basic'],
  async afterWrite(_tx, resource) {
    if (has(resource, EXPLODE)) throw new Error('hook exploded on purpose');
  },
  async afterDelete(_tx, previous) {
    if (has(previous, UNDELETABLE)) throw new Error('hook exploded on purpose');
  },
};

for (const driver of drivers) {
  describe(`FHIR REST edge cases (${driver})`, () => {
    let server: TestServer;
    let existing: Resource;
    before(async () => {
      // A test-only hook on Basic that fails inside the write transaction, after the current
      // row, the history row and the search index have been written (see 'a failing write').
      server = await startServer(driver, { hooks: [explodingHook] });
      existing = (await server.fhir('POST', '/Patient', { body: patient('Edge') })).body;
    });
    after(() => server.stop());

    /** Rows of one resource (or of every resource of the type) in the current, history and index tables. */
    async function storedRows(type: string, id?: string): Promise<{ current: number; history: number; index: number }> {
      const db = server.app.db;
      const where = id === undefined ? 'resource_type = $1 AND $2::text IS NULL' : 'resource_type = $1 AND id = $2';
      const count = async (table: string) =>
        (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE ${where}`, [type, id ?? null])).rows[0].n;
      let index = 0;
      for (const t of SEARCH_TABLES) index += await count(`search_${t}`);
      return { current: await count('resource'), history: await count('resource_history'), index };
    }

    describe('URLs', () => {
      test('PUT with an id of 65 characters in the URL answers 400 naming the id rule', async () => {
        const id = 'a'.repeat(65);
        const res = await server.fhir('PUT', `/Patient/${id}`, { body: patient('Long', { id }) });
        assertOutcome(res, 400, 'invalid', `Invalid id value '${'a'.repeat(40)}…': ${ID_RULE}`);
        assert.deepEqual(res.body.issue[0].expression, ['Patient.id']);
      });

      test('PUT with `a b` as id answers 400, and creates nothing', async () => {
        const res = await server.fhir('PUT', '/Patient/a%20b', { body: patient('Space', { id: 'a b' }) });
        assertOutcome(res, 400, 'invalid', `Invalid id value 'a b': ${ID_RULE}`);
        assert.deepEqual(await storedRows('Patient', 'a b'), { current: 0, history: 0, index: 0 });
      });

      test('a NUL byte as id answers 400 for read, vread, history, delete and instance operations (was 500)', async () => {
        const expected = `Invalid id value '\u0000': ${ID_RULE}`;
        for (const [method, path] of [
          ['GET', '/Patient/%00'],
          ['DELETE', '/Patient/%00'],
          ['GET', '/Patient/%00/_history'],
          ['GET', '/Patient/%00/_history/1'],
          ['GET', '/CodeSystem/%00/$lookup?code=x'],
          ['GET', '/ValueSet/%00/$validate-code?code=x&system=http://x.org'],
        ]) {
          assertOutcome(await server.fhir(method, path), 400, 'invalid', expected);
        }
      });

      test('an encoded slash stays inside its segment: /Patient/%2F is an invalid id, not a search', async () => {
        assertOutcome(await server.fhir('GET', '/Patient/%2F'), 400, 'invalid', `Invalid id value '%2F': ${ID_RULE}`);
        assertOutcome(await server.fhir('GET', `/Patient/x%2F${existing.id}`), 400, 'invalid', `Invalid id value 'x%2F${existing.id}': ${ID_RULE}`);
      });

      test('broken percent-encoding in the path answers 400 Invalid URL encoding (was not an OperationOutcome)', async () => {
        for (const path of ['/fhir/R4/Patient/%', '/fhir/R4/Patient/%E0%A4%A', '/fhir/R4/Patient/%zz/_history']) {
          const res = await rawRequest(server, 'GET', path);
          assertOutcome(res, 400, 'invalid', 'Invalid URL encoding');
          assert.match(String(res.headers['content-type']), /^application\/fhir\+json/);
          assert.ok(res.headers['x-request-id']);
        }
      });

      test('a raw non-ASCII byte in the request line answers 400 Malformed HTTP request (was not an OperationOutcome)', async () => {
        assertOutcome(await rawRequest(server, 'GET', '/fhir/R4/Patient/\u00fc'), 400, 'invalid', 'Malformed HTTP request');
      });

      test('a request line over the header size limit answers 431 (was not an OperationOutcome)', async () => {
        const res = await server.fhir('GET', `/Patient?name=${'a'.repeat(20_000)}`);
        assertOutcome(res, 431, 'too-costly', 'Request header fields too large');
      });

      test('an over-long path parameter of a non-FHIR route answers 414 (was not an OperationOutcome)', async () => {
        const res = await server.request('POST', `/admin/projects/${'p'.repeat(150)}/invite`, { body: {}, contentType: 'application/json' });
        assertOutcome(res, 414, 'too-long', 'URL path segment too long');
      });

      test('unknown routes below the FHIR base answer 404 Not found', async () => {
        for (const path of ['/Patient/x/extra', `/Patient/${existing.id}/_history/1/more`, '/metadata/x', '/$lookup/x']) {
          assertOutcome(await server.fhir('GET', path), 404, 'not-found', 'Not found');
        }
      });
    });

    describe('methods', () => {
      test('PATCH where the URL does not support it answers 405 with Allow, even with a JSON Patch body', async () => {
        const res = await server.fhir('PATCH', `/Patient/${existing.id}/_history`, {
          raw: JSON.stringify([{ op: 'replace', path: '/gender', value: 'male' }]),
          contentType: 'application/json-patch+json',
        });
        assertOutcome(res, 405, 'not-supported', 'Method PATCH not allowed (allowed: GET, HEAD)');
        assert.equal(res.headers.get('allow'), 'GET, HEAD');
        assert.equal((await server.fhir('GET', `/Patient/${existing.id}`)).body.gender, undefined);
      });

      test('OPTIONS and methods a URL does not support answer 405 with Allow', async () => {
        const options = await server.fhir('OPTIONS', '/Patient');
        assertOutcome(options, 405, 'not-supported', 'Method OPTIONS not allowed (allowed: GET, HEAD, POST, PUT, DELETE, PATCH)');
        assert.equal(options.headers.get('allow'), 'GET, HEAD, POST, PUT, DELETE, PATCH');
        assertOutcome(await server.fhir('DELETE', '/Patient/_search'), 405, 'not-supported', 'Method DELETE not allowed (allowed: GET, HEAD, POST)');
        assertOutcome(await server.fhir('POST', `/Patient/${existing.id}/_history`), 405, 'not-supported', 'Method POST not allowed (allowed: GET, HEAD)');
        assertOutcome(await server.fhir('PUT', '/metadata'), 405, 'not-supported', 'Method PUT not allowed (allowed: GET, HEAD)');
      });

      test('HEAD answers like GET without a body', async () => {
        const get = await server.fhir('GET', `/Patient/${existing.id}`);
        const head = await server.fhir('HEAD', `/Patient/${existing.id}`);
        assert.equal(head.status, 200);
        assert.equal(head.text, '');
        assert.equal(head.headers.get('etag'), get.headers.get('etag'));
        assert.equal(head.headers.get('last-modified'), get.headers.get('last-modified'));
        assert.match(head.headers.get('content-type') ?? '', /^application\/fhir\+json/);
        const missing = await server.fhir('HEAD', '/Patient/does-not-exist');
        assert.equal(missing.status, 404);
        assert.equal(missing.text, '');
        assert.equal((await server.fhir('HEAD', '/Patient?_count=1')).status, 200);
      });

      test('HEAD /metadata is public like GET /metadata', async () => {
        const res = await server.fhir('HEAD', '/metadata', { token: null });
        assert.equal(res.status, 200);
        assert.equal(res.text, '');
      });
    });

    describe('bodies', () => {
      test('POST without a body answers 400 saying the body is empty', async () => {
        for (const raw of [undefined, '', '   ']) {
          const res = await server.fhir('POST', '/Patient', { raw, headers: raw === undefined ? {} : { 'content-type': 'application/fhir+json' } });
          assertOutcome(res, 400, 'invalid', 'Request body is empty: expected a Patient resource');
        }
      });

      test('a fhir+json body that is null, a number, a string or an array answers 400', async () => {
        for (const raw of ['null', '42', '"Patient"', '[]', `[${JSON.stringify(patient('InArray'))}]`]) {
          assertOutcome(await server.fhir('POST', '/Patient', { raw }), 400, 'invalid', 'Expected a JSON object resource');
          assertOutcome(await server.fhir('PUT', `/Patient/${existing.id}`, { raw }), 400, 'invalid', 'Expected a JSON object resource');
        }
      });

      test('10 000 nested arrays answer 400 instead of overflowing the stack', async () => {
        const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
        const text = 'Content is nested too deeply (more than 256 levels)';
        assertOutcome(await server.fhir('POST', '/Patient', { raw: deep }), 400, 'invalid', text);
        assertOutcome(await server.fhir('POST', '/Patient', { raw: `{"resourceType":"Patient","name":${deep}}` }), 400, 'invalid', text);
        // A search body is turned into parameters by stringifying its values (was 500).
        assertOutcome(await server.fhir('POST', '/Patient/_search', { raw: `{"name":${deep}}` }), 400, 'invalid', text);
        assertOutcome(await server.fhir('POST', '/ValueSet/$validate-code', { raw: `{"resourceType":"Parameters","parameter":${deep}}` }), 400, 'invalid', text);
        assert.equal((await server.request('GET', '/healthz')).status, 200);
      });

      test('deep but legal nesting is still validated as a resource', async () => {
        let extension = '{"url":"http://x.org/e","valueString":"v"}';
        for (let i = 0; i < 100; i++) extension = `{"url":"http://x.org/e","extension":[${extension}]}`;
        const res = await server.fhir('POST', '/Patient', { raw: `{"resourceType":"Patient","extension":[${extension}]}` });
        assert.equal(res.status, 400);
        assert.equal(ooText(res.body), 'Maximum nesting depth (64) exceeded');
      });

      test('brackets inside strings do not count as nesting', async () => {
        const res = await server.fhir('POST', '/Patient', { body: patient(`${'['.repeat(1000)}\\"{`) });
        assert.equal(res.status, 201, res.text);
        assert.equal(res.body.name[0].family, `${'['.repeat(1000)}\\"{`);
      });

      test('a NUL character in a JSON body answers 400, whichever feature would store it (was 500 for CodeSystem, ValueSet, login)', async () => {
        const text = 'Content contains a NUL character (U+0000)';
        const codeSystem = { resourceType: 'CodeSystem', status: 'active', content: 'complete', url: 'http://example.org/nul', concept: [{ code: 'a\u0000' }] };
        assertOutcome(await server.fhir('POST', '/CodeSystem', { body: codeSystem }), 400, 'invalid', text);
        assertOutcome(await server.fhir('POST', '/ValueSet', { body: { resourceType: 'ValueSet', status: 'active', url: 'http://example.org/\u0000' } }), 400, 'invalid', text);
        assertOutcome(await server.fhir('POST', '/Patient', { body: patient('a\u0000b') }), 400, 'invalid', text);
        assertOutcome(await server.fhir('PUT', `/Patient/${existing.id}`, { body: { ...existing, gender: 'male', name: [{ family: '\u0000' }] } }), 400, 'invalid', text);
        const login = await server.request('POST', '/auth/login', { body: { email: 'a\u0000@example.org', password: 'x' }, contentType: 'application/json', token: null });
        assertOutcome(login, 400, 'invalid', text);
        assert.equal((await server.fhir('GET', '/CodeSystem?url=http://example.org/nul')).body.total, 0);
      });

      test('a NUL character in a form body answers 400 (was 500 for client_credentials)', async () => {
        const res = await server.request('POST', '/oauth2/token', {
          raw: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'a\u0000', client_secret: 'x' }).toString(),
          contentType: 'application/x-www-form-urlencoded',
          token: null,
        });
        assertOutcome(res, 400, 'invalid', 'Content contains a NUL character (U+0000)');
      });

      test('an escaped backslash before u0000 is text, not a NUL', async () => {
        const res = await server.fhir('POST', '/Patient', { raw: '{"resourceType":"Patient","name":[{"family":"\\\\u0000"}]}' });
        assert.equal(res.status, 201, res.text);
        assert.equal(res.body.name[0].family, '\\u0000');
      });

      test('a body without a content type, or with one that is no media type, answers 415 naming it', async () => {
        const body = JSON.stringify(patient('Ct'));
        assertOutcome(await server.fhir('POST', '/Patient', { raw: body, contentType: 'garbage' }), 415, 'not-supported', 'Unsupported content type: garbage');
        assertOutcome(await server.fhir('POST', '/Patient', { raw: body, contentType: 'text/plain' }), 415, 'not-supported', 'Unsupported content type: text/plain');
        const untyped = await rawRequest(server, 'POST', '/fhir/R4/Patient', { 'content-length': String(Buffer.byteLength(body)) }, body);
        assertOutcome(untyped, 415, 'not-supported', 'Unsupported content type: none');
      });

      test('POST ignores a client id even when it is not a valid id', async () => {
        for (const id of ['a b', 'x'.repeat(65), 5, null, '']) {
          const res = await server.fhir('POST', '/Patient', { body: patient('ClientId', { id }) });
          assert.equal(res.status, 201, `${JSON.stringify(id)}: ${res.text}`);
          assert.notEqual(res.body.id, id);
          assert.equal((await server.fhir('GET', `/Patient/${res.body.id}`)).status, 200);
        }
      });

      test('prototype keys are unknown elements and pollute nothing', async () => {
        const res = await server.fhir('POST', '/Patient', { raw: '{"resourceType":"Patient","__proto__":{"polluted":true},"constructor":{"x":1}}' });
        assert.equal(res.status, 400);
        assert.deepEqual(res.body.issue.map((i: OperationOutcomeIssue) => i.details?.text).sort(), ["Unknown element '__proto__' in Patient", "Unknown element 'constructor' in Patient"]);
        assert.equal(({} as Record<string, unknown>).polluted, undefined);
      });

      test('form fields named __proto__ are fields, not the prototype (were silently dropped)', async () => {
        const res = await server.fhir('POST', '/Patient/_search', { raw: '__proto__=1&__proto__=2', contentType: 'application/x-www-form-urlencoded' });
        assertOutcome(res, 400, 'invalid', 'Unknown search parameter: __proto__');
      });

      test('meta.versionId and meta.lastUpdated from the client never override the server', async () => {
        const created = await server.fhir('POST', '/Patient', { body: patient('Meta', { meta: { versionId: '7', lastUpdated: '1999-01-01T00:00:00Z' } }) });
        assert.equal(created.status, 201, created.text);
        assert.equal(created.body.meta.versionId, '1');
        assert.notEqual(created.body.meta.lastUpdated, '1999-01-01T00:00:00Z');
        const updated = await server.fhir('PUT', `/Patient/${created.body.id}`, {
          body: { ...created.body, gender: 'female', meta: { ...created.body.meta, versionId: '42' } },
        });
        assert.equal(updated.status, 200, updated.text);
        assert.equal(updated.body.meta.versionId, '2');
        assert.equal(updated.headers.get('etag'), 'W/"2"');
        assert.equal((await server.fhir('GET', `/Patient/${created.body.id}`)).body.meta.versionId, '2');
        assertOutcome(await server.fhir('GET', `/Patient/${created.body.id}/_history/42`), 404, 'not-found', 'Not found');
        const numeric = await server.fhir('POST', '/Patient', { body: patient('Meta', { meta: { versionId: 7 } }) });
        assertOutcome(numeric, 400, 'structure', 'Expected a string (FHIR id), got a number');
      });
    });

    describe('history and conditional update', () => {
      test('vread of a version id that is not a number, or beyond any version, answers 404 (was 500 for 20 digits)', async () => {
        for (const vid of ['abc', '0', '-1', '1.5', '2', '2147483648', '99999999999999999999']) {
          assertOutcome(await server.fhir('GET', `/Patient/${existing.id}/_history/${vid}`), 404, 'not-found', 'Not found');
        }
      });

      test('_count and _offset on history must be whole numbers', async () => {
        assertOutcome(await server.fhir('GET', `/Patient/${existing.id}/_history?_count=-1`), 400, 'invalid', "Invalid value '-1' for _count");
        assertOutcome(await server.fhir('GET', `/Patient/${existing.id}/_history?_count=abc`), 400, 'invalid', "Invalid value 'abc' for _count");
        assertOutcome(await server.fhir('GET', '/Patient/_history?_offset=x'), 400, 'invalid', "Invalid value 'x' for _offset");
      });

      test('_since on history must be a FHIR date or instant (was 500 for `1`, `-1` and `2020`)', async () => {
        for (const since of ['1', '-1', 'abc', '2020-13', '2021-02-29', '99999-01-01']) {
          assertOutcome(await server.fhir('GET', `/Patient/_history?_since=${since}`), 400, 'invalid', `Invalid value '${since}' for _since`);
        }
        const year = await server.fhir('GET', '/Patient/_history?_since=2020');
        assert.equal(year.status, 200, year.text);
        assert.ok(year.body.total >= 1);
        const future = await server.fhir('GET', `/Patient/${existing.id}/_history?_since=${encodeURIComponent('2999-01-01T00:00:00+02:00')}`);
        assert.equal(future.status, 200, future.text);
        assert.equal(future.body.total, 0);
      });

      test('If-Match that names no version answers 412 Version mismatch', async () => {
        const created = (await server.fhir('POST', '/Patient', { body: patient('IfMatch') })).body;
        for (const ifMatch of ['garbage', 'W/"1', 'W/"one"', 'W/"1", W/"2"', 'W/"99999999999999999999"', 'W/""']) {
          const res = await server.fhir('PUT', `/Patient/${created.id}`, { body: { ...created, gender: 'male' }, headers: { 'if-match': ifMatch } });
          assertOutcome(res, 412, 'conflict', 'Version mismatch');
        }
        assert.equal((await server.fhir('GET', `/Patient/${created.id}/_history`)).body.total, 1);
      });

      test('If-Match: * updates an existing resource and refuses to create one', async () => {
        const created = (await server.fhir('POST', '/Patient', { body: patient('Star') })).body;
        const res = await server.fhir('PUT', `/Patient/${created.id}`, { body: { ...created, gender: 'male' }, headers: { 'if-match': '*' } });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.meta.versionId, '2');
        const absent = await server.fhir('PUT', '/Patient/star-absent', { body: patient('Star', { id: 'star-absent' }), headers: { 'if-match': '*' } });
        assertOutcome(absent, 412, 'conflict', 'Version mismatch');
        assertOutcome(await server.fhir('GET', '/Patient/star-absent'), 404, 'not-found', 'Not found');
      });

      test('an empty _format is ignored; _format=xml answers 406', async () => {
        assert.equal((await server.fhir('GET', `/Patient/${existing.id}?_format=`)).status, 200);
        assertOutcome(await server.fhir('GET', `/Patient/${existing.id}?_format=xml`), 406, 'not-supported', 'XML is not supported: this server answers application/fhir+json only');
      });
    });

    describe('a failing write leaves nothing behind', () => {
      const basic = (value: string, extra: Record<string, unknown> = {}) => ({
        resourceType: 'Basic',
        code: { text: 'edge' },
        identifier: [{ system: 'http://example.org/edge', value }],
        ...extra,
      });

      function assertInternalError(res: { status: number; text: string }): void {
        assertOutcome(res, 500, 'exception', 'Internal server error');
        assert.doesNotMatch(res.text, /exploded|\bat\s|\.ts:/);
      }

      test('create: 500 Internal server error, no current row, history row or index row', async () => {
        const before = await storedRows('Basic');
        assertInternalError(await server.fhir('POST', '/Basic', { body: basic(EXPLODE) }));
        assert.deepEqual(await storedRows('Basic'), before);
        const search = await server.fhir('GET', `/Basic?identifier=${EXPLODE}`);
        assert.equal(search.body.total, 0);
      });

      test('create-on-PUT: no placeholder is left, the id stays free', async () => {
        assertInternalError(await server.fhir('PUT', '/Basic/edge-put', { body: basic(EXPLODE, { id: 'edge-put' }) }));
        assert.deepEqual(await storedRows('Basic', 'edge-put'), { current: 0, history: 0, index: 0 });
        assertOutcome(await server.fhir('GET', '/Basic/edge-put'), 404, 'not-found', 'Not found');
        const retry = await server.fhir('PUT', '/Basic/edge-put', { body: basic('fine', { id: 'edge-put' }) });
        assert.equal(retry.status, 201, retry.text);
        assert.equal(retry.body.meta.versionId, '1');
      });

      test('update: the previous version stays current, readable and searchable', async () => {
        const created = (await server.fhir('POST', '/Basic', { body: basic('before-update') })).body;
        const rows = await storedRows('Basic', created.id);
        await server.fhir('GET', `/Basic/${created.id}`); // warm any read cache
        assertInternalError(await server.fhir('PUT', `/Basic/${created.id}`, { body: basic(EXPLODE, { id: created.id }) }));
        assert.deepEqual(await storedRows('Basic', created.id), rows);
        const read = await server.fhir('GET', `/Basic/${created.id}`);
        assert.equal(read.body.meta.versionId, '1');
        assert.equal(read.body.identifier[0].value, 'before-update');
        assert.equal((await server.fhir('GET', `/Basic/${created.id}/_history`)).body.total, 1);
        assert.equal((await server.fhir('GET', `/Basic?identifier=${EXPLODE}`)).body.total, 0);
        assert.equal((await server.fhir('GET', '/Basic?identifier=before-update')).body.total, 1);
        const next = await server.fhir('PUT', `/Basic/${created.id}`, { body: basic('after-update', { id: created.id }), headers: { 'if-match': 'W/"1"' } });
        assert.equal(next.status, 200, next.text);
        assert.equal(next.body.meta.versionId, '2');
      });

      test('delete: the resource stays, unchanged and searchable', async () => {
        const created = (await server.fhir('POST', '/Basic', { body: basic(UNDELETABLE) })).body;
        const rows = await storedRows('Basic', created.id);
        assertInternalError(await server.fhir('DELETE', `/Basic/${created.id}`));
        assert.deepEqual(await storedRows('Basic', created.id), rows);
        const read = await server.fhir('GET', `/Basic/${created.id}`);
        assert.equal(read.status, 200);
        assert.equal(read.body.meta.versionId, '1');
        assert.equal((await server.fhir('GET', `/Basic?identifier=${UNDELETABLE}`)).body.total, 1);
      });
    });

    describe('concurrency', () => {
      const N = 20;

      test(`${N} concurrent creates of distinct resources all land`, async () => {
        const family = `Crowd-${driver}`;
        const results = await Promise.all(Array.from({ length: N }, (_, i) => server.fhir('POST', '/Patient', { body: patient(family, { birthDate: `2000-01-${String(i + 1).padStart(2, '0')}` }) })));
        assert.deepEqual(results.map((r) => r.status), Array(N).fill(201));
        assert.equal(new Set(results.map((r) => r.body.id)).size, N);
        const search = await server.fhir('GET', `/Patient?family=${family}&_count=100`);
        assert.equal(search.body.total, N);
        for (const r of results) assert.equal((await server.fhir('GET', `/Patient/${r.body.id}/_history`)).body.total, 1);
      });

      test(`${N} concurrent updates without If-Match each land as their own version`, async () => {
        const created = (await server.fhir('POST', '/Patient', { body: patient('Contended') })).body;
        const results = await Promise.all(
          Array.from({ length: N }, (_, i) => server.fhir('PUT', `/Patient/${created.id}`, { body: { ...created, name: [{ family: `Writer${i}` }] } })),
        );
        assert.deepEqual(results.map((r) => r.status), Array(N).fill(200), results.map((r) => r.text).join('\n'));
        const versions = results.map((r) => Number(r.body.meta.versionId)).sort((a, b) => a - b);
        assert.deepEqual(versions, Array.from({ length: N }, (_, i) => i + 2));
        const read = await server.fhir('GET', `/Patient/${created.id}`);
        assert.equal(read.body.meta.versionId, String(N + 1));
        const last = results.find((r) => r.body.meta.versionId === String(N + 1))!;
        assert.equal(read.body.name[0].family, last.body.name[0].family);
        const history = await server.fhir('GET', `/Patient/${created.id}/_history?_count=100`);
        assert.equal(history.body.total, N + 1);
        const families = history.body.entry.map((e: { resource: Patient }) => e.resource.name?.[0].family).sort();
        assert.deepEqual(families, ['Contended', ...Array.from({ length: N }, (_, i) => `Writer${i}`)].sort());
        const rows = await storedRows('Patient', created.id);
        assert.equal(rows.current, 1);
        assert.equal(rows.history, N + 1);
      });
    });
  });
}

for (const driver of drivers) {
  describe(`CORS (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver);
    });
    after(() => server.stop());

    test('a preflight from any origin is answered 204 with the allowed methods and headers', async () => {
      const res = await server.request('OPTIONS', '/fhir/R4/Patient', {
        token: null,
        headers: { origin: 'https://app.example.org', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
      });
      assert.equal(res.status, 204);
      assert.equal(res.headers.get('access-control-allow-origin'), '*');
      assert.match(res.headers.get('access-control-allow-methods') ?? '', /POST/);
      assert.match(res.headers.get('access-control-allow-headers') ?? '', /Authorization/);
    });

    test('a cross-origin request gets Access-Control-Allow-Origin and the exposed headers', async () => {
      const res = await server.fhir('POST', '/Patient', { body: { resourceType: 'Patient' }, headers: { origin: 'https://app.example.org' } });
      assert.equal(res.status, 201);
      assert.equal(res.headers.get('access-control-allow-origin'), '*');
      assert.match(res.headers.get('access-control-expose-headers') ?? '', /Location/);
    });
  });
}
