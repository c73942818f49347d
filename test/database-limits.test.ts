import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import type { Resource } from '@medplum/fhirtypes';
import type { ResourceHook } from '../src/core/repository.js';
import { createTestDatabase, drivers, ooText, startServer, type TestServer } from './harness.js';

/**
 * Database time limits (docs/errors.md#database-limits, #health-check). Before them a request
 * could hold the database for as long as it liked, requests queued behind it without end, and
 * `/healthz` queued behind them too. A write hook stands in for "a request that holds the
 * database": it keeps its transaction open (or, on PostgreSQL, runs one slow statement).
 */
const HOLD_MS = 4000;

function holder(): ResourceHook {
  return {
    types: ['Basic'],
    async afterWrite(tx, resource: Resource) {
      const text = (resource as { code?: { text?: string } }).code?.text;
      if (text === 'hold') {
        await tx.query('SELECT 1');
        await sleep(HOLD_MS); // holds the transaction (and, on PGlite, the database) idle
        await tx.query('SELECT 1');
      } else if (text === 'slow-statement') {
        await tx.query('SELECT pg_sleep(3)');
      }
    },
  };
}

const basic = (text: string) => ({ resourceType: 'Basic', code: { text } });

for (const driver of drivers) {
  describe(`database limits (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      // The first start (migrations, first-start accounts) runs without the test's tight limits.
      const storage = driver === 'pg' ? { databaseUrl: await createTestDatabase() } : { dataDir: mkdtempSync(join(tmpdir(), 'lattice-limits-')) };
      await (await startServer(driver, storage)).stop();
      // The harness logs in right after the start, while the start's background work (base
      // terminologies, statistics) may hold the one PGlite connection past the 300 ms acquire
      // limit on a loaded machine: that login gets 503 busy (as it should), so start again.
      for (let attempt = 1; ; attempt++) {
        try {
          server = await startServer(driver, {
            ...storage,
            hooks: [holder()],
            env: { LATTICE_DB_STATEMENT_TIMEOUT: '2000', LATTICE_DB_ACQUIRE_TIMEOUT: '300', LATTICE_DB_POOL_SIZE: '1', LATTICE_BUNDLE_ENTRY_MS: '3000' },
          });
          break;
        } catch (err) {
          if (attempt === 5 || !/busy/.test(String(err))) throw err;
        }
      }
    });
    after(() => server.stop());

    test('/healthz reports the database', async () => {
      // Right after a start the background work (base terminologies, statistics) may hold the one
      // PGlite connection past this test's 300 ms acquire limit: `busy` then, `ok` once it is done.
      let res = await server.request('GET', '/healthz', { token: null });
      for (let i = 0; i < 100 && res.body.database?.state === 'busy'; i++) {
        await sleep(100);
        res = await server.request('GET', '/healthz', { token: null });
      }
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, { status: 'ok', database: { driver, state: 'ok' }, pid: process.pid });
    });

    test('a request holding the database past the limit: 503, nothing written; others get 503 busy, /healthz answers', async () => {
      const held = server.fhir('POST', '/Basic', { body: basic('hold') });
      await sleep(400); // the holder has its transaction open
      const [waiting, health] = await Promise.all([server.fhir('GET', '/Basic?_summary=count'), server.request('GET', '/healthz', { token: null })]);
      assert.equal(waiting.status, 503, waiting.text);
      assert.equal(waiting.body.issue[0].code, 'transient');
      assert.equal(ooText(waiting.body), 'The database is busy; try again later');
      assert.equal(waiting.headers.get('retry-after'), '1');
      assert.equal(health.status, 200, health.text);
      assert.equal(health.body.status, 'ok');
      assert.equal(health.body.database.state, driver === 'pglite' ? 'busy' : 'ok');

      const res = await held;
      assert.equal(res.status, 503, res.text);
      assert.equal(res.body.issue[0].code, 'timeout');
      assert.equal(ooText(res.body), 'The request exceeded the database time limit (2000 ms) and was cancelled');
      const count = await server.fhir('GET', '/Basic?_summary=count');
      assert.equal(count.status, 200, count.text);
      assert.equal(count.body.total, 0, 'the cancelled write was rolled back');
      assert.equal((await server.fhir('POST', '/Basic', { body: basic('quick') })).status, 201);
    });

    test('a transaction Bundle may pause between statements for as long as its own limit, not only the statement limit', async () => {
      // Two entries: 2000 + 2 × 3000 ms. The hook keeps the transaction idle for 4000 ms between two
      // statements (as a large Bundle's validation and routing of its entries may): PostgreSQL ended
      // the session at its idle-in-transaction limit (2000 ms) and the Bundle failed 503 "unavailable".
      const before = (await server.fhir('GET', '/Basic?_summary=count')).body.total;
      const res = await server.fhir('POST', '/', {
        body: { resourceType: 'Bundle', type: 'transaction', entry: [basic('hold'), basic('quick')].map((resource) => ({ resource, request: { method: 'POST', url: 'Basic' } })) },
      });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.entry.map((e: { response: { status: string } }) => e.response.status), ['201 Created', '201 Created']);
      assert.equal((await server.fhir('GET', '/Basic?_summary=count')).body.total, before + 2);
    });

    if (driver === 'pg') {
      test('one slow statement is cancelled by the server (statement_timeout): 503', async () => {
        const before = (await server.fhir('GET', '/Basic?_summary=count')).body.total;
        const res = await server.fhir('POST', '/Basic', { body: basic('slow-statement') });
        assert.equal(res.status, 503, res.text);
        assert.equal(ooText(res.body), 'The request exceeded the database time limit (2000 ms) and was cancelled');
        assert.equal((await server.fhir('GET', '/Basic?_summary=count')).body.total, before, 'nothing written');
      });
    }
  });
}
