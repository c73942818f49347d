import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
process.env.LATTICE_DEBUG_STATEMENTS = '1';
import type { Queryable } from '../src/core/database.js';
import { statementCounts } from '../src/storage/statement-count.js';
import { waitingCreates } from '../src/storage/repository.js';
import { drivers, startServer, type TestServer } from './harness.js';

/**
 * Group commit of plain creates (docs/rest.md#cost-of-a-request): creates that arrive while a
 * statement of creates is in flight wait and go together in the next one; each is answered after
 * its commit, and one that the database refuses fails alone.
 */
const patient = (family: string) => ({ resourceType: 'Patient', name: [{ family, given: ['Grouped'] }], gender: 'female' });

for (const driver of drivers) {
  describe(`concurrent creates are committed together (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      const hour = '3600000';
      server = await startServer(driver, { env: { LATTICE_EMAIL_POLL_MS: hour, LATTICE_SUBSCRIPTION_POLL_MS: hour, LATTICE_EXPORT_POLL_MS: hour } });
      for (let i = 0; i < 2; i++) assert.equal((await server.fhir('POST', '/Patient', { body: patient('Warm') })).status, 201);
    });
    after(() => server.stop());

    /**
     * Runs `send` while the database cannot write resources (PGlite: a transaction holds the
     * database; PostgreSQL: it holds a lock that keeps inserts out), until `queued` creates wait
     * in the group; then lets the database go and returns what `send` answered.
     */
    async function whileHeld<T>(queued: number, send: () => Promise<T>): Promise<T> {
      let release: () => void = () => undefined;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let held: () => void = () => undefined;
      const holding = new Promise<void>((resolve) => (held = resolve));
      const holder = server.app.db.transaction(async (tx: Queryable) => {
        if (driver === 'pg') await tx.query('LOCK TABLE resource IN SHARE MODE');
        held();
        await gate;
      });
      await holding;
      const answers = send();
      const waitUntil = Date.now() + 60_000;
      while (waitingCreates(server.app.db) < queued) {
        assert.ok(Date.now() < waitUntil, `only ${waitingCreates(server.app.db)} creates waited for the group`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      release();
      await holder;
      return answers;
    }

    test('creates that wait while one is in flight share one statement', async () => {
      // The first creates go at once (PGlite: one statement in flight; PostgreSQL: four); the
      // other ones wait behind them and go together. Before: one statement per create.
      const first = driver === 'pglite' ? 1 : 4;
      const before = statementCounts.statements;
      const answers = await whileHeld(12 - first, () => Promise.all(Array.from({ length: 12 }, (_, i) => server.fhir('POST', '/Patient', { body: patient(`Groupcount${i}`) }))));
      assert.deepEqual(answers.map((a) => a.status), new Array(12).fill(201));
      // The holding transaction's BEGIN and COMMIT (and PostgreSQL's LOCK), the first creates, one group.
      assert.equal(statementCounts.statements - before, (driver === 'pg' ? 3 : 2) + first + 1);
      const found = await server.fhir('GET', '/Patient?given=grouped&_count=100&_elements=name');
      const families = new Set((found.body.entry as Array<{ resource: { name: Array<{ family: string }> } }>).map((e) => e.resource.name[0].family));
      for (let i = 0; i < 12; i++) assert.ok(families.has(`Groupcount${i}`), `Groupcount${i} stored`);
      for (const answer of answers) assert.equal((await server.fhir('GET', `/Patient/${answer.body.id}`)).status, 200);
    });

    test('one create the database refuses fails alone: the others of its group are stored and answered 201', async () => {
      // A constraint of this test's own: the database refuses any resource of family "Poison".
      await server.app.db.query(`ALTER TABLE resource ADD CONSTRAINT test_no_poison CHECK (content NOT LIKE '%"family":"Poison"%')`);
      try {
        const alone = await server.fhir('POST', '/Patient', { body: patient('Poison') });
        assert.notEqual(alone.status, 201);
        const first = driver === 'pglite' ? 1 : 4;
        const families = [...Array.from({ length: first }, (_, i) => `Ahead${i}`), 'Goodone', 'Poison', 'Goodtwo'];
        const answers = await whileHeld(3, () => Promise.all(families.map((family) => server.fhir('POST', '/Patient', { body: patient(family) }))));
        const status = Object.fromEntries(families.map((family, i) => [family, answers[i].status]));
        assert.deepEqual(status, { ...Object.fromEntries(families.map((f) => [f, 201])), Poison: alone.status });
        for (const family of ['Goodone', 'Goodtwo']) {
          const stored = await server.fhir('GET', `/Patient?family=${family}&_summary=count`);
          assert.equal(stored.body.total, 1, family);
        }
        assert.equal((await server.fhir('GET', '/Patient?family=poison&_summary=count')).body.total, 0);
        // An invalid one among valid ones: refused before it joins (400), the others stored.
        const mixed = await Promise.all([
          server.fhir('POST', '/Patient', { body: patient('Validone') }),
          server.fhir('POST', '/Patient', { body: { ...patient('Invalid'), gender: 'nonsense' } }),
        ]);
        assert.deepEqual(mixed.map((a) => a.status), [201, 400]);
        assert.equal((await server.fhir('GET', `/Patient/${mixed[0].body.id}`)).status, 200);
      } finally {
        await server.app.db.query('ALTER TABLE resource DROP CONSTRAINT test_no_poison');
      }
    });

    test('a transaction whose second batch of creates the database refuses keeps nothing, and the database serves on', async () => {
      // Batches of 200 go while the next entries are validated: the refusal of the second one
      // (entry 250) must still roll back the first, already written, and reach the caller.
      await server.app.db.query(`ALTER TABLE resource ADD CONSTRAINT test_no_poison CHECK (content NOT LIKE '%"family":"Poison"%')`);
      try {
        const entry = Array.from({ length: 450 }, (_, i) => ({ resource: patient(i === 250 ? 'Poison' : 'Batchrefused'), request: { method: 'POST', url: 'Patient' } }));
        const refused = await server.fhir('POST', '', { body: { resourceType: 'Bundle', type: 'transaction', entry } });
        assert.notEqual(refused.status, 200);
        assert.equal((await server.fhir('GET', '/Patient?family=batchrefused&_summary=count')).body.total, 0);
        const next = await server.fhir('POST', '', { body: { resourceType: 'Bundle', type: 'transaction', entry: entry.filter((_, i) => i !== 250) } });
        assert.equal(next.status, 200, next.text);
        assert.equal((await server.fhir('GET', '/Patient?family=batchrefused&_summary=count')).body.total, 449);
      } finally {
        await server.app.db.query('ALTER TABLE resource DROP CONSTRAINT test_no_poison');
      }
    });
  });
}
