import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import type { OperationOutcome } from '@medplum/fhirtypes';
import { drivers, startServer, type TestServer } from './harness.js';
import { prng } from './support/prng.js';

// Fuzz of the FHIR REST surface over raw HTTP (node:http, so paths reach the server exactly as
// written: `..`, `//`, broken percent-encoding, latin-1 bytes). Methods, paths, query strings,
// headers and bodies are generated from a seeded PRNG, most of them wrong. Every answer must be
// below 500, every error an OperationOutcome that says something, no request may hang, the
// server must still be healthy afterwards, and the stored data must be consistent (no change
// half-written). Replay a failure with LATTICE_FUZZ_SEED=<seed>.

const REQUESTS = Number(process.env.LATTICE_FUZZ_REQUESTS ?? 6000);
const CONCURRENCY = 20;
const REQUEST_TIMEOUT_MS = 15_000;
const SEED = Number(process.env.LATTICE_FUZZ_SEED ?? 20250214);

interface FuzzRequest {
  method: string;
  /** Raw request target (path and query), sent as is. */
  path: string;
  headers: Record<string, string>;
  body?: string;
}

interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

const METHODS = ['GET', 'GET', 'GET', 'POST', 'POST', 'PUT', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'];
const TYPES = ['Patient', 'Patient', 'Patient', 'Patient', 'Observation', 'Observation', 'Practitioner', 'CodeSystem', 'ValueSet', 'patient', 'Spaceship', 'Resource', 'DomainResource', 'Bundle', 'OperationOutcome'];
/** Odd id segments, already in their on-the-wire form. */
const ODD_IDS = [
  'a%20b', 'a'.repeat(65), 'b'.repeat(300), '%00', 'x%00y', '%2F', 'a%2Fb', '..', '.', '%2E%2E', '%', '%zz', '%E0%A4%A',
  '%C3%BC', '\u00fc', '%F0%9F%98%80', '_history', '_search', '$everything', '%24lookup', '-', 'a.b', 'A-Z.09', '%22', "'", '*',
  'null', 'undefined', '__proto__', 'constructor', '0',
];
const VIDS = ['1', '2', '0', '-1', 'abc', '99999999999999999999', '2147483648', '1.5', '%00', '', '1e3', '01'];
const QUERY_KEYS = [
  '_count', '_count', '_offset', '_offset', '_sort', '_since', '_since', '_format', '_summary', '_elements', '_pretty', '_id',
  'name', 'family', 'birthdate', '_lastUpdated', 'identifier', '_include', '_revinclude', '_total', 'foo', 'name:exact',
  'name:missing', 'birthdate:not', '%00', '%C3%BC', '_at', '_has:Observation:patient:code', 'general-practitioner.name',
  'code', 'subject', 'value-quantity', '%', '_count:exact',
];
/** Query values in their on-the-wire form. */
const QUERY_VALUES = [
  '', '-1', 'abc', '0', '1', '20', '1000', '1001', '99999999999999999999', '1e3', '2020', '2020-13-01', '2020-02-30', 'gt2020-01-01',
  '2020-01-01T00:00:00Z', '2020-01-01T00:00:00%2B01:00', '1', '-1', '0000', '99999-01-01', 'xml', 'json', 'application/fhir%2Bxml',
  'foo', 'true', 'count', 'text', '%00', '%', '%E0%A4%A', '%C3%BC', '\u00fc', '%F0%9F%98%80', 'a,b', '-name', '_id', '-_lastUpdated',
  'Patient:general-practitioner', '*', 'x'.repeat(3000), '1%7C%7C', 'http://x%7Cy', '%2F%2F', 'Patient/1',
];
const CONTENT_TYPES = [
  'application/fhir+json', 'application/fhir+json', 'application/fhir+json', 'application/json', 'application/json+fhir; charset=utf-8',
  'application/fhir+json; charset=utf-16', 'text/plain', 'application/xml', 'application/fhir+xml', 'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x', '', 'garbage', 'application/json-patch+json', 'application/fhir+json;;;', '*/*', undefined,
];
const IF_MATCH = ['W/"1"', '"1"', '1', 'garbage', '*', 'W/""', 'W/"1", W/"2"', 'W/"99999999999999999999"', 'W/"-1"', ''];
const PREFER = ['return=minimal', 'return=representation', 'return=OperationOutcome', 'return=garbage', 'respond-async', 'handling=strict'];
const AUTH = ['Bearer garbage', 'Bearer a.b.c', 'Basic Zm9vOmJhcg==', 'Bearer ', 'Digest x', 'Bearer eyJhbGciOiJub25lIn0.e30.'];
/** Non-FHIR routes: they answer OperationOutcomes too (except OAuth, which has its own error form). */
const OTHER_PATHS = [
  '/auth/login', '/auth/profile', '/oauth2/token', '/.well-known/jwks.json', '/.well-known/smart-configuration', '/nothing/here',
  '/admin/projects/%00/client', `/admin/projects/${'p'.repeat(150)}/invite`, '/admin/projects/x/invite', '/healthz', '/fhir', '/fhir/R5/Patient',
  '/fhir/R4', '//fhir/R4/Patient', '/fhir/R4//Patient//', '/fhir/R4/Patient/', '/fhir/R4/%24lookup', '/fhir/R4/$nope', '/fhir/R4/metadata',
];

class Gen {
  constructor(readonly next: () => number) {}
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)];
  }

  request(ids: { Patient: string[]; Observation: string[] }): FuzzRequest {
    const method = this.pick(METHODS);
    const type = this.pick(TYPES);
    const id = this.chance(0.65) && (type === 'Patient' || type === 'Observation') ? this.pick(ids[type]) : this.pick(ODD_IDS);
    const headers: Record<string, string> = {};
    let path: string;
    if (this.chance(0.08)) path = this.pick(OTHER_PATHS);
    else {
      const tail = this.pick<string[]>([
        [], [], [id], [id], [id], [id, '_history'], [id, '_history', this.pick(VIDS)], ['_history'], ['_search'],
        [this.pick(['$validate', '$everything', '%24expand', '$lookup', '$', '$%00'])], [id, this.pick(['$validate-code', '$x'])],
        [id, 'extra'], [id, '_history', '1', 'more'], [''], ['', ''],
      ]);
      path = `/fhir/R4/${[type, ...tail].join('/')}`;
      if (this.chance(0.05)) path = this.pick(['/fhir/R4/metadata', '/fhir/R4/', '/fhir/R4/$lookup', '/fhir/R4/_history']);
      if (this.chance(0.1)) path += '/';
    }
    if (this.chance(0.5)) path += `?${this.query()}`;
    if (this.chance(0.15)) headers['if-match'] = this.pick(IF_MATCH);
    if (this.chance(0.15)) headers['prefer'] = this.pick(PREFER);
    if (this.chance(0.05)) headers['authorization'] = this.pick(AUTH);
    if (this.chance(0.05)) headers['accept'] = this.pick(['application/fhir+xml', '*/*', 'text/html', 'application/json']);
    if (this.chance(0.05)) headers['x-request-id'] = this.pick(['abc', 'x'.repeat(300), 'a b', '%00']);
    let body: string | undefined;
    if (method !== 'GET' && method !== 'HEAD' && this.chance(0.85)) body = this.body(type, id);
    else if (this.chance(0.03)) body = this.body(type, id); // a GET with a body
    if (body !== undefined) {
      const contentType = this.chance(0.8) ? 'application/fhir+json' : this.pick(CONTENT_TYPES);
      if (contentType !== undefined) headers['content-type'] = contentType;
    }
    return { method, path, headers, body };
  }

  query(): string {
    const pairs: string[] = [];
    for (let i = 1 + this.int(4); i > 0; i--) {
      const key = this.pick(QUERY_KEYS);
      if (this.chance(0.05)) pairs.push(key);
      else pairs.push(`${key}=${this.pick(QUERY_VALUES)}`);
    }
    if (this.chance(0.1)) pairs.push(pairs[0]); // repeated parameter
    return pairs.join(this.chance(0.05) ? '&&' : '&');
  }

  /** A request body, as text: a plausible resource with a mistake, or something else entirely. */
  body(type: string, id: string): string {
    const resource = (): Record<string, unknown> => {
      const r: Record<string, unknown> = { resourceType: this.chance(0.8) ? type : this.pick(['Observation', 'patient', '', 5, null]) };
      if (this.chance(0.5)) r.id = this.chance(0.7) ? decodeURIComponentSafe(id) : this.pick(['a b', 'x'.repeat(65), '', 5, null, 'ok-id']);
      const text = () => this.pick(['a', 'b c', '', 'ü', '\u0000', 'x\u0000y', '\u0007', 'x'.repeat(10_000), '\ud800']);
      if (type === 'Observation' || r.resourceType === 'Observation') Object.assign(r, { status: 'final', code: { text: text() } });
      else if (type === 'CodeSystem') {
        Object.assign(r, { status: 'active', content: 'complete', url: `http://example.org/${text()}`, concept: [{ code: text(), display: text() }, { code: text() }] });
      } else if (type === 'ValueSet') {
        Object.assign(r, { status: 'active', url: `http://example.org/${text()}`, compose: { include: [{ system: text(), concept: [{ code: text() }] }] } });
      } else r.name = [{ family: this.pick(['Fuzz', '', 'ü', '\u0000', 'x'.repeat(10_000), '\ud800']) }];
      return r;
    };
    if (this.chance(0.35)) return JSON.stringify(resource());
    switch (this.int(16)) {
      case 0: return '';
      case 1: return this.pick(['null', '5', '"text"', 'true', '[]', '[{}]', '{}', ' ', '\ufeff{}', '{"resourceType":', '<Patient/>', 'a=1&b=2']);
      case 2: return JSON.stringify([resource()]);
      case 3: return `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
      case 4: return `{"resourceType":"${type}","extension":[${'{"url":"http://x","extension":['.repeat(5_000)}${']}'.repeat(5_000)}]}`;
      case 5: return `{"resourceType":"${type}","contained":${'['.repeat(2_000)}${']'.repeat(2_000)}}`;
      case 6: return JSON.stringify({ ...resource(), meta: this.pick(['x', 5, [], null, { versionId: 7 }, { versionId: '99' }, { lastUpdated: 'yesterday' }, { project: 'other' }, { tag: 'x' }]) });
      case 7: return JSON.stringify({ ...resource(), [this.pick(['birthDate', 'gender', 'active', 'name', 'identifier', 'text'])]: this.pick([null, [null], 5, 'x', {}, [], [[]], true]) });
      case 8: return `{"resourceType":"${type}","${this.pick(['__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'toString', '__defineGetter__'])}":${this.pick(['{"x":1}', 'null', '1', '[]'])}}`;
      case 9: return `{"resourceType":"${type}","name":[{"${this.pick(['__proto__', 'constructor', 'toJSON', 'valueOf'])}":{"family":"x"}}]}`;
      case 10: {
        const many: Record<string, unknown> = { resourceType: type };
        for (let i = 0, n = 500 + this.int(5_000); i < n; i++) many[`k${i}`] = i;
        return JSON.stringify(many);
      }
      case 11: return JSON.stringify({ ...resource(), text: { status: 'generated', div: `<div xmlns="http://www.w3.org/1999/xhtml">${'y'.repeat(this.int(300_000))}</div>` } });
      case 12: return JSON.stringify(resource()).slice(0, this.int(40)); // truncated
      case 13: return this.pick(['{"resourceType":"Patient","name":[{"family":"\\ud800"}]}', '{"resourceType":"Patient"}{"x":1}', '{"a":1,"a":2,"resourceType":"Patient"}', '\u0000']);
      default: return JSON.stringify(resource());
    }
  }
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** One raw HTTP request; rejects when no answer arrives in time (a hang). */
function send(server: TestServer, agent: http.Agent, req: FuzzRequest): Promise<RawResponse> {
  const url = new URL(server.baseUrl);
  const headers: Record<string, string> = { ...req.headers };
  if (!('authorization' in headers) && server.adminToken) headers.authorization = `Bearer ${server.adminToken}`;
  const body = req.body === undefined ? undefined : Buffer.from(req.body, 'utf8');
  if (body) headers['content-length'] = String(body.length);
  return new Promise((resolve, reject) => {
    const r = http.request({ host: url.hostname, port: url.port, method: req.method, path: req.path, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    r.setTimeout(REQUEST_TIMEOUT_MS, () => r.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`)));
    r.on('error', reject);
    r.end(body);
  });
}

/** What is wrong with an answer (undefined when it is acceptable). */
function problem(req: FuzzRequest, res: RawResponse): string | undefined {
  if (res.status >= 500 || res.status < 100) return `status ${res.status}`;
  if (req.method === 'HEAD') return res.text === '' ? undefined : 'HEAD answered with a body';
  if (res.status < 300 || res.status === 304) return undefined;
  if (req.path.startsWith('/oauth2/')) return undefined; // OAuth errors have their own JSON form
  let body: Partial<OperationOutcome> | null;
  try {
    body = JSON.parse(res.text);
  } catch {
    return 'error body is not JSON';
  }
  if (body?.resourceType !== 'OperationOutcome') return 'error body is not an OperationOutcome';
  const text = body.issue?.[0]?.details?.text;
  if (typeof text !== 'string' || text.length === 0) return 'OperationOutcome without details.text';
  if (/\n\s+at /.test(res.text)) return 'stack trace in the body';
  return undefined;
}

/** Runs `fn(i)` for i in [0, total) with at most `limit` in flight. */
async function pool(limit: number, total: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < total) await fn(next++);
    }),
  );
}

/**
 * Storage invariants that any completed or rolled-back change keeps: no reserved placeholder
 * row survives, the current row's version is the newest history row, versions are 1..n without
 * gaps, and the search index only holds current, non-deleted resources.
 */
async function storageViolations(server: TestServer): Promise<string[]> {
  const db = server.app.db;
  const count = async (sql: string): Promise<number> => (await db.query<{ n: number }>(sql)).rows[0].n;
  const checks: Record<string, string> = {
    'placeholder rows left': 'SELECT count(*)::int AS n FROM resource WHERE version_id = 0',
    'current version missing from history': `SELECT count(*)::int AS n FROM resource r WHERE NOT EXISTS (
       SELECT 1 FROM resource_history h WHERE h.resource_type = r.resource_type AND h.id = r.id AND h.version_id = r.version_id)`,
    'history newer than the current version or with gaps': `SELECT count(*)::int AS n FROM resource r WHERE r.version_id <> (
       SELECT count(*) FROM resource_history h WHERE h.resource_type = r.resource_type AND h.id = r.id)`,
    'history of a resource that does not exist': `SELECT count(*)::int AS n FROM resource_history h WHERE NOT EXISTS (
       SELECT 1 FROM resource r WHERE r.resource_type = h.resource_type AND r.id = h.id)`,
  };
  for (const table of ['string', 'token', 'reference', 'date', 'number', 'uri', 'quantity']) {
    checks[`search_${table} rows of deleted or missing resources`] = `SELECT count(*)::int AS n FROM search_${table} s WHERE NOT EXISTS (
       SELECT 1 FROM resource r WHERE r.resource_type = s.resource_type AND r.id = s.id AND NOT r.deleted)`;
  }
  const out: string[] = [];
  for (const [name, sql] of Object.entries(checks)) {
    const n = await count(sql);
    if (n > 0) out.push(`${name}: ${n}`);
  }
  return out;
}

for (const driver of drivers) {
  describe(`FHIR REST fuzz (${driver})`, () => {
    let server: TestServer;
    let agent: http.Agent;
    const ids = { Patient: [] as string[], Observation: [] as string[] };
    before(async () => {
      server = await startServer(driver);
      agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
      for (let i = 0; i < 8; i++) {
        ids.Patient.push((await server.fhir('POST', '/Patient', { body: { resourceType: 'Patient', name: [{ family: `Seed${i}` }] } })).body.id);
        const obs = { resourceType: 'Observation', status: 'final', code: { text: `seed ${i}` }, subject: { reference: `Patient/${ids.Patient[i]}` } };
        ids.Observation.push((await server.fhir('POST', '/Observation', { body: obs })).body.id);
      }
      ids.Patient.push('fuzz-put-1', 'fuzz-put-2'); // ids a PUT may create
    });
    after(async () => {
      agent.destroy();
      await server.stop();
    });

    test(`${REQUESTS} generated requests (seed ${SEED}): no 5xx, no hang, every error an OperationOutcome`, async () => {
      const gen = new Gen(prng(SEED));
      const requests = Array.from({ length: REQUESTS }, () => gen.request(ids));
      const failures = new Map<string, string>();
      const statuses = new Map<number, number>();
      await pool(CONCURRENCY, REQUESTS, async (i) => {
        const req = requests[i];
        let what: string | undefined;
        let res: RawResponse | undefined;
        try {
          res = await send(server, agent, req);
          what = problem(req, res);
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        } catch (err) {
          what = `no answer: ${(err as Error).message}`;
        }
        if (!what) return;
        const key = `${what} ${res?.status ?? ''} ${req.method} ${req.path.split('?')[0].slice(0, 60)}`;
        if (!failures.has(key) && failures.size < 20) {
          const headers = JSON.stringify({ ...req.headers, authorization: req.headers.authorization ? '…' : undefined });
          failures.set(key, `${what}: #${i} ${req.method} ${req.path.slice(0, 200)} ${headers}\n  body: ${(req.body ?? '').slice(0, 200)}\n  → ${res?.status} ${res?.text.slice(0, 300)}`);
        }
      });
      assert.deepEqual([...failures.values()], [], `seed ${SEED}`);
      // The generator must reach both success and refusal, or the test proves little.
      const count = (lo: number, hi: number) => [...statuses].filter(([s]) => s >= lo && s < hi).reduce((n, [, c]) => n + c, 0);
      assert.ok(count(200, 300) > REQUESTS / 20, `too few successes: ${JSON.stringify([...statuses])}`);
      assert.ok(count(400, 500) > REQUESTS / 2, `too few refusals: ${JSON.stringify([...statuses])}`);
    });

    test('the server is healthy and the stored data consistent afterwards', async () => {
      const health = await server.request('GET', '/healthz', { token: null });
      assert.equal(health.status, 200);
      assert.equal(health.body.status, 'ok');
      assert.equal((await server.fhir('GET', `/Patient/${ids.Patient[0]}/_history`)).status, 200);
      assert.deepEqual(await storageViolations(server), []);
    });
  });
}
