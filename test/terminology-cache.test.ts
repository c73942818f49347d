import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { CodeSystem, CodeSystemConcept, Parameters } from '@medplum/fhirtypes';
import { terminologyCache } from '../src/terminology/providers/fhir/index-cache.js';
import { createTestDatabase, drivers, startServer, type TestServer } from './harness.js';
import { startServerProcess } from './support/server-process.js';

/**
 * The caches behind the terminology operations (docs/terminology.md#in-memory-index): never
 * stale (a write on one node is seen by the very next request on another), correct within a
 * memory budget smaller than the code systems in use, and `tx-resource` content is never
 * written to the database.
 */

function codeSystem(id: string, url: string, size: number, label: string): CodeSystem {
  const concept: CodeSystemConcept[] = [];
  for (let i = 0; i < size; i++) {
    concept.push({
      code: `C${i}`,
      display: `${label} ${i}`,
      ...(i > 0 ? { property: [{ code: 'parent', valueCode: `C${Math.floor((i - 1) / 2)}` }] } : {}),
      designation: [{ language: 'de', value: `${label} Begriff ${i}` }],
    });
  }
  return {
    resourceType: 'CodeSystem',
    id,
    url,
    version: '1',
    status: 'active',
    content: 'complete',
    property: [{ code: 'parent', uri: 'http://hl7.org/fhir/concept-properties#parent', type: 'code' }],
    concept,
  };
}

const param = (body: Parameters, name: string) => body.parameter?.find((p) => p.name === name);

async function lookupDisplay(server: TestServer, url: string, code: string): Promise<string | undefined> {
  const res = await server.fhir('GET', `/CodeSystem/$lookup?system=${encodeURIComponent(url)}&code=${code}`);
  assert.equal(res.status, 200, res.text);
  return param(res.body, 'display')?.valueString;
}

async function validateResult(server: TestServer, vsUrl: string, system: string, code: string): Promise<boolean | undefined> {
  const res = await server.fhir('GET', `/ValueSet/$validate-code?url=${encodeURIComponent(vsUrl)}&system=${encodeURIComponent(system)}&code=${code}`);
  assert.equal(res.status, 200, res.text);
  return param(res.body, 'result')?.valueBoolean;
}

for (const driver of drivers) {
  describe(`terminology caches (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      // 1 MB: room for about seven of the twelve code systems below at a time (an index is
      // ~120 kB: flat columns, docs/terminology.md#in-memory-index).
      server = await startServer(driver, { env: { LATTICE_TX_CACHE_MB: '1' } });
    });
    after(() => server.stop());

    test('with more code systems than the memory budget holds, answers stay correct (indexes are evicted and rebuilt)', async () => {
      const urls = Array.from({ length: 12 }, (_, i) => `http://example.org/budget/${i}`);
      for (const [i, url] of urls.entries()) {
        const put = await server.fhir('PUT', `/CodeSystem/budget-${i}`, { body: codeSystem(`budget-${i}`, url, 1200, `System${i}`) });
        assert.equal(put.status, 201, put.text);
      }
      const before = terminologyCache(server.app.db).stats();
      for (let round = 0; round < 3; round++) {
        for (const [i, url] of urls.entries()) {
          const code = `C${(round * 397 + i * 131) % 1200}`;
          assert.equal(await lookupDisplay(server, url, code), `System${i} ${code.slice(1)}`);
          const sub = await server.fhir('GET', `/CodeSystem/$subsumes?system=${encodeURIComponent(url)}&codeA=C0&codeB=${code}`);
          assert.equal(param(sub.body, 'outcome')?.valueCode, code === 'C0' ? 'equivalent' : 'subsumes', sub.text);
        }
      }
      const stats = terminologyCache(server.app.db).stats();
      assert.ok(stats.bytes <= stats.budget, JSON.stringify(stats));
      assert.ok(stats.evictions > before.evictions, `nothing was evicted: ${JSON.stringify(stats)}`);
      assert.ok(stats.loads - before.loads > urls.length, `indexes were not rebuilt: ${JSON.stringify(stats)}`);
    });

    test('an authenticated $lookup, $subsumes or $validate-code whose answer is in memory runs no database statement', async () => {
      const url = 'http://example.org/lean/cs';
      assert.equal((await server.fhir('PUT', '/CodeSystem/lean', { body: codeSystem('lean', url, 100, 'Lean') })).status, 201);
      const vs = { resourceType: 'ValueSet', id: 'lean', url: 'http://example.org/lean/vs', status: 'active', compose: { include: [{ system: url, filter: [{ property: 'concept', op: 'is-a', value: 'C1' }] }] } };
      assert.equal((await server.fhir('PUT', '/ValueSet/lean', { body: vs })).status, 201);
      const s = encodeURIComponent(url);
      const paths = [
        `/CodeSystem/$lookup?system=${s}&code=C9`,
        `/CodeSystem/$subsumes?system=${s}&codeA=C1&codeB=C9`,
        `/CodeSystem/$validate-code?url=${s}&code=C9&display=Lean%209`,
        `/ValueSet/$validate-code?url=${encodeURIComponent(vs.url)}&system=${s}&code=C9`,
      ];
      const db = server.app.db as { query: (sql: string, params?: unknown[]) => Promise<unknown> };
      const query = db.query;
      const statements: string[] = [];
      try {
        for (const path of paths) {
          assert.equal((await server.fhir('GET', path)).status, 200);
          await terminologyCache(server.app.db).settled(); // the index the first request started building
          // Background jobs (the e-mail outbox) may query meanwhile: only the request's own statements count.
          db.query = (sql, params) => {
            if (!/outbox/i.test(sql)) statements.push(sql);
            return query.call(server.app.db, sql, params);
          };
          const again = await server.fhir('GET', path);
          db.query = query;
          assert.equal(again.status, 200, again.text);
          assert.deepEqual(statements, [], path);
        }
      } finally {
        db.query = query;
      }
    });

    test('no request waits for an index build: while it runs, $lookup and $subsumes answer from SQL, then from memory', async () => {
      const url = 'http://example.org/cold/cs';
      assert.equal((await server.fhir('PUT', '/CodeSystem/cold', { body: codeSystem('cold', url, 300, 'Cold') })).status, 201);
      // Hold every index build until released: the requests below must be answered meanwhile.
      const db = server.app.db;
      const readPass = db.readPass.bind(db);
      let release = () => {};
      const gate = new Promise<void>((resolve) => (release = resolve));
      let builds = 0;
      db.readPass = async (fn) => {
        builds++;
        await gate;
        return readPass(fn);
      };
      try {
        const s = encodeURIComponent(url);
        assert.equal(await lookupDisplay(server, url, 'C7'), 'Cold 7');
        const sub = await server.fhir('GET', `/CodeSystem/$subsumes?system=${s}&codeA=C1&codeB=C7`);
        assert.equal(param(sub.body, 'outcome')?.valueCode, 'subsumes', sub.text);
        const lookup = await server.fhir('GET', `/CodeSystem/$lookup?system=${s}&code=C7&property=parent&property=child`);
        assert.equal(lookup.status, 200, lookup.text);
        assert.equal(builds, 1, 'one build started, in the background');
      } finally {
        db.readPass = readPass;
        release();
      }
      await terminologyCache(db).settled();
      // Built: the same answers, now without a database statement.
      const counted = db as { query: (sql: string, params?: unknown[]) => Promise<unknown> };
      const query = counted.query;
      const statements: string[] = [];
      counted.query = (sql, params) => {
        if (!/outbox/i.test(sql)) statements.push(sql);
        return query.call(db, sql, params);
      };
      try {
        assert.equal(await lookupDisplay(server, url, 'C7'), 'Cold 7');
      } finally {
        counted.query = query;
      }
      assert.deepEqual(statements, []);
    });

    test('an index load holds up no other request: /healthz and another $lookup are answered while it runs', async () => {
      // Large enough for many load statements (docs/terminology.md#in-memory-index). On PGlite
      // each statement runs on the event loop; run back to back they held every other request
      // until the whole load was done.
      const url = 'http://example.org/busy/cs';
      assert.equal((await server.fhir('PUT', '/CodeSystem/busy', { body: codeSystem('busy', url, 12_000, 'Busy') })).status, 201);
      const db = server.app.db;
      const order: string[] = [];
      const readPass = db.readPass.bind(db);
      let loading: Promise<unknown> | undefined;
      db.readPass = (fn) => {
        const pass = readPass(fn);
        loading ??= pass.then(() => order.push('index loaded'));
        return pass;
      };
      try {
        assert.equal(await lookupDisplay(server, url, 'C7'), 'Busy 7'); // starts the load
        assert.ok(loading, 'the first $lookup started a load');
        const health = server.request('GET', '/healthz').then((res) => order.push(`healthz ${res.status}`));
        const other = lookupDisplay(server, url, 'C11').then((display) => order.push(`lookup ${display}`));
        await Promise.all([health, other, loading]);
      } finally {
        db.readPass = readPass;
      }
      assert.deepEqual(new Set(order), new Set(['healthz 200', 'lookup Busy 11', 'index loaded']), order.join(', '));
      // The order says something on PGlite, where the load's statements run on this event loop
      // and behind requests in the turn lock: without that yield, both waited for the whole
      // load. On PostgreSQL the load runs on the server over its own snapshot; a 12,000-concept
      // load may simply finish first on a busy machine, which says nothing about waiting.
      if (driver === 'pglite') assert.deepEqual(order.slice(-1), ['index loaded'], order.join(', '));
      await terminologyCache(db).settled();
    });

    test('a CodeSystem sent as tx-resource is answered from memory and leaves no row in the terminology tables', async () => {
      const count = async () => {
        const rows = await server.app.db.query<{ n: number }>(
          `SELECT ((SELECT count(*) FROM tx_code_system) + (SELECT count(*) FROM tx_concept) + (SELECT count(*) FROM tx_designation)
            + (SELECT count(*) FROM tx_concept_property) + (SELECT count(*) FROM tx_closure))::int AS n`,
        );
        return rows.rows[0].n;
      };
      const rowsBefore = await count();
      const inline = codeSystem('inline', 'http://example.org/inline/cs', 200, 'Inline');
      for (let i = 0; i < 3; i++) {
        const res = await server.fhir('POST', '/CodeSystem/$subsumes', {
          body: {
            resourceType: 'Parameters',
            parameter: [
              { name: 'system', valueUri: inline.url },
              { name: 'codeA', valueCode: 'C1' },
              { name: 'codeB', valueCode: ['C3', 'C5', 'C6'][i] },
              { name: 'tx-resource', resource: { ...inline, title: `copy ${i}` } },
            ],
          },
        });
        assert.equal(res.status, 200, res.text);
        assert.equal(param(res.body, 'outcome')?.valueCode, i === 0 ? 'subsumes' : 'not-subsumed', res.text);
      }
      const validate = await server.fhir('POST', '/ValueSet/$validate-code', {
        body: {
          resourceType: 'Parameters',
          parameter: [
            { name: 'url', valueUri: 'http://example.org/inline/vs' },
            { name: 'system', valueUri: inline.url },
            { name: 'code', valueCode: 'C9' },
            { name: 'display', valueString: 'Inline Begriff 9' },
            { name: 'tx-resource', resource: inline },
            {
              name: 'tx-resource',
              resource: { resourceType: 'ValueSet', url: 'http://example.org/inline/vs', status: 'active', compose: { include: [{ system: inline.url, filter: [{ property: 'concept', op: 'is-a', value: 'C1' }] }] } },
            },
          ],
        },
      });
      assert.equal(validate.status, 200, validate.text);
      assert.equal(param(validate.body, 'result')?.valueBoolean, true, validate.text);
      assert.equal(await count(), rowsBefore);
    });
  });
}

if (drivers.includes('pg')) {
  describe('terminology caches across two nodes (pg)', () => {
    test('a CodeSystem or ValueSet updated through one node: the very next request through the other sees the new version', async () => {
      const databaseUrl = await createTestDatabase();
      const env = { LATTICE_PUBLIC_URL: 'http://lattice.test' };
      const a = await startServer('pg', { databaseUrl, env });
      // The other node is a process of its own: only the change feed can tell it (same issuer
      // and signing keys, so A's member token works there too).
      const node = await startServerProcess({ DATABASE_URL: databaseUrl, ...env, LATTICE_ADMIN_PASSWORD: 'admin-password-123' });
      const b = {
        fhir: async (method: string, path: string) => {
          const res = await fetch(`${node.baseUrl}/fhir/R4${path}`, { method, headers: { authorization: `Bearer ${a.memberToken}` } });
          const text = await res.text();
          return { status: res.status, text, body: JSON.parse(text) as Parameters };
        },
      } as unknown as TestServer;
      try {
        const url = 'http://example.org/two-nodes/cs';
        const vsUrl = 'http://example.org/two-nodes/vs';
        const cs = codeSystem('two-nodes', url, 50, 'First');
        const vs = { resourceType: 'ValueSet', id: 'two-nodes', url: vsUrl, status: 'active', compose: { include: [{ system: url, filter: [{ property: 'concept', op: 'is-a', value: 'C1' }] }] } };
        assert.equal((await a.fhir('PUT', '/CodeSystem/two-nodes', { body: cs })).status, 201);
        assert.equal((await a.fhir('PUT', '/ValueSet/two-nodes', { body: vs })).status, 201);
        // B has answered from (and, its background build done, cached) the first versions.
        for (let i = 0; i < 3; i++) {
          assert.equal(await lookupDisplay(b, url, 'C3'), 'First 3');
          assert.equal(await validateResult(b, vsUrl, url, 'C3'), true);
          await new Promise((resolve) => setTimeout(resolve, 200));
        }

        for (let round = 1; round <= 3; round++) {
          const label = `Round${round}`;
          const updated = await a.fhir('PUT', '/CodeSystem/two-nodes', { body: codeSystem('two-nodes', url, 50, label) });
          assert.equal(updated.status, 200, updated.text);
          assert.equal(await lookupDisplay(b, url, 'C3'), `${label} 3`);
          const root = round % 2 === 1 ? 'C2' : 'C1';
          const changed = await a.fhir('PUT', '/ValueSet/two-nodes', { body: { ...vs, compose: { include: [{ system: url, filter: [{ property: 'concept', op: 'is-a', value: root }] }] } } });
          assert.equal(changed.status, 200, changed.text);
          assert.equal(await validateResult(b, vsUrl, url, 'C3'), root === 'C1');
        }
      } finally {
        await a.stop();
        await node.stop();
      }
    });
  });
}
