import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Resource } from '@medplum/fhirtypes';
import type { ResourceHook } from '../src/core/repository.js';
import type { PgliteDatabase } from '../src/storage/pglite-database.js';
import { createTestDatabase, drivers, ooText, startServer, type TestServer } from './harness.js';

/**
 * One statement never stops the server (docs/errors.md#embedded-database-thread). PGlite used to
 * run on the HTTP thread: one long statement held every request, `/healthz` included, and the
 * statement timeout was only checked between statements (a chained search ran 400 s). Now it
 * runs in its own thread, a statement past `LATTICE_DB_STATEMENT_TIMEOUT` is stopped (the thread
 * ended, the folder reopened), and statistics are kept current in the background.
 */

/** A statement that would run for hours: stopped by the statement limit on either driver. */
const ENDLESS = 'SELECT count(*) FROM generate_series(1, 1e12)';

function slowStatement(started: () => void): ResourceHook {
  return {
    types: ['Basic'],
    async afterWrite(tx, resource: Resource) {
      if ((resource as { code?: { text?: string } }).code?.text !== 'endless') return;
      started();
      await tx.query(ENDLESS);
    },
  };
}

const basic = (text: string) => ({ resourceType: 'Basic', code: { text } });

for (const driver of drivers) {
  describe(`a statement past the limit (${driver})`, () => {
    let server: TestServer;
    let dir: string;
    let statementStarted: () => void = () => undefined;
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'lattice-thread-'));
      // A folder (not memory://): an in-memory database cannot be reopened, so its statement is not stopped.
      const storage = driver === 'pg' ? { databaseUrl: await createTestDatabase() } : { dataDir: join(dir, 'data') };
      await (await startServer(driver, storage)).stop();
      server = await startServer(driver, {
        ...storage,
        hooks: [slowStatement(() => statementStarted())],
        env: { LATTICE_DB_STATEMENT_TIMEOUT: '8000', LATTICE_DB_ACQUIRE_TIMEOUT: '5000' },
      });
    });
    after(async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    test('/healthz and a cached read answer while it runs; it gets 503; committed data stays and the database serves again', async () => {
      const kept = await server.fhir('POST', '/Basic', { body: basic('kept') });
      assert.equal(kept.status, 201, kept.text);
      const running = new Promise<void>((resolve) => (statementStarted = resolve));
      let heldAnswered = false;
      const held = server.fhir('POST', '/Basic', { body: basic('endless') }).finally(() => (heldAnswered = true));
      await running;
      const health = await server.request('GET', '/healthz', { token: null });
      const metadata = await server.request('GET', '/fhir/R4/metadata', { token: null });
      assert.equal(heldAnswered, false, 'the probes were answered while the statement ran');
      assert.equal(health.status, 200, health.text);
      assert.equal(health.body.status, 'ok');
      assert.equal(health.body.database.state, driver === 'pglite' ? 'busy' : 'ok');
      assert.equal(metadata.status, 200);

      const res = await held;
      assert.equal(res.status, 503, res.text);
      assert.equal(res.body.issue[0].code, 'timeout');
      assert.equal(ooText(res.body), 'The request exceeded the database time limit (8000 ms) and was cancelled');

      const read = await server.fhir('GET', `/Basic/${kept.body.id}`);
      assert.equal(read.status, 200, read.text);
      const count = await server.fhir('GET', '/Basic?_summary=count');
      assert.equal(count.status, 200, count.text);
      assert.equal(count.body.total, 1, 'the stopped write left nothing');
      assert.equal((await server.fhir('POST', '/Basic', { body: basic('after') })).status, 201);
      if (driver === 'pglite') await (server.app.db as PgliteDatabase).analyzed(); // else `busy` while it runs
      const healthAfter = await server.request('GET', '/healthz', { token: null });
      assert.equal(healthAfter.body.database.state, 'ok');
    });
  });
}

/** A clinic's record in one transaction: 1 Patient, 3 Practitioners, 24 Encounters, 432 Observations. */
function clinicRecord(): unknown {
  const entry: unknown[] = [];
  const add = (fullUrl: string, resource: Record<string, unknown>) =>
    entry.push({ fullUrl, resource, request: { method: 'POST', url: resource.resourceType } });
  add('urn:uuid:patient', { resourceType: 'Patient', name: [{ family: 'Mensah', given: ['Ama'] }] });
  const families = ['Okafor', 'Lindqvist', 'Haddad'];
  families.forEach((family, i) => add(`urn:uuid:practitioner-${i}`, { resourceType: 'Practitioner', name: [{ family, given: ['Sam'] }] }));
  for (let e = 0; e < 24; e++) {
    add(`urn:uuid:encounter-${e}`, {
      resourceType: 'Encounter',
      status: 'finished',
      class: { system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode', code: 'AMB' },
      subject: { reference: 'urn:uuid:patient' },
      participant: [{ individual: { reference: `urn:uuid:practitioner-${e % 3}` } }],
      period: { start: `2026-0${1 + (e % 9)}-1${e % 10}T09:00:00Z` },
    });
    for (let o = 0; o < 18; o++) {
      add(`urn:uuid:observation-${e}-${o}`, {
        resourceType: 'Observation',
        status: 'final',
        code: { coding: [{ system: 'http://loinc.org', code: o % 2 ? '8867-4' : '8310-5' }] },
        subject: { reference: 'urn:uuid:patient' },
        encounter: { reference: `urn:uuid:encounter-${e}` },
        valueQuantity: { value: 60 + o, unit: '/min', system: 'http://unitsofmeasure.org', code: '/min' },
      });
    }
  }
  return { resourceType: 'Bundle', type: 'transaction', entry };
}

for (const driver of drivers.filter((d) => d === 'pglite')) {
  describe(`a clinic loaded by REST, then a two-link chain (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver);
    });
    after(() => server.stop());

    test('statistics are taken in the background; the chain answers with the right total while /healthz answers', async () => {
      const loaded = await server.fhir('POST', '', { body: clinicRecord() });
      assert.equal(loaded.status, 200, loaded.text);
      assert.equal(loaded.body.entry.length, 460);

      const db = server.app.db as PgliteDatabase;
      await db.analyzed();
      for (const table of ['resource', 'search_reference', 'search_token']) {
        const { rows } = await db.query<{ estimated: number; actual: number }>(
          `SELECT (SELECT reltuples FROM pg_class WHERE relname = $1)::int AS estimated, (SELECT count(*) FROM ${table})::int AS actual`,
          [table],
        );
        const { estimated, actual } = rows[0];
        assert.ok(actual >= 460 && estimated >= actual / 2, `${table}: statistics for ${estimated} rows of ${actual}`);
      }

      const [chain, health] = await Promise.all([
        server.fhir('GET', '/Observation?encounter.participant:Practitioner.name=Okafor&_summary=count'),
        server.request('GET', '/healthz', { token: null }),
      ]);
      assert.equal(health.status, 200, health.text);
      assert.equal(chain.status, 200, chain.text);
      assert.equal(chain.body.total, 8 * 18, 'the 8 encounters with Dr Okafor hold 18 observations each');
    });
  });
}
