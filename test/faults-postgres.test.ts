import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { createClient, drivers, ooText, startServer, tokenRequest, type ApiResponse, type TestClient, type TestServer } from './harness.js';
import { FhirError } from '../src/fhir/outcome.js';
import { Listener } from '../src/storage/pg-listener.js';
import { startPrivatePostgres, type PrivatePostgres } from './support/private-postgres.js';

/**
 * PostgreSQL stopped and frozen (SIGSTOP) under load (docs/errors.md#database-limits,
 * #health-check). Before the time limits, requests and `/healthz` hung for as long as the
 * server was frozen. Now every request answers 503 with an OperationOutcome (never a 500,
 * never a hang), `/healthz` says `unavailable`, and when PostgreSQL is back Lattice serves
 * again without a restart. The cluster is the test's own (the suite's shared one must not be
 * frozen).
 */
const DEADLINE_MS = 60_000; // "answers at all": far beyond every limit configured below

/** `promise`, or a failure naming `what` when it has not settled by the deadline. */
async function answersBy<T>(what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${DEADLINE_MS} ms`)), DEADLINE_MS)));
  try {
    return await Promise.race([promise, hung]);
  } finally {
    clearTimeout(timer);
  }
}

function assertUnavailable(res: ApiResponse, what: string): void {
  assert.equal(res.status, 503, `${what}: ${res.status} ${res.text}`);
  assert.equal(res.body?.resourceType, 'OperationOutcome', `${what}: ${res.text}`);
  assert.ok(['transient', 'timeout'].includes(res.body.issue[0].code), res.text);
  assert.match(ooText(res.body) ?? '', /^The database is (unavailable|busy); try again later$|^The request exceeded the database time limit/);
}

if (drivers.includes('pg')) {
  describe('PostgreSQL outages', () => {
    let cluster: PrivatePostgres;
    let server: TestServer;
    let patientId: string;
    let unreadId: string;
    let client: TestClient;
    before(async () => {
      cluster = await startPrivatePostgres();
      const admin = new pg.Client({ connectionString: cluster.url });
      await admin.connect();
      await admin.query('CREATE DATABASE lattice');
      await admin.end();
      const databaseUrl = cluster.url.replace(/\/postgres$/, '/lattice');
      // First start (migrations, accounts) with the default limits, then the test's tight ones.
      await (await startServer('pg', { databaseUrl })).stop();
      server = await startServer('pg', {
        databaseUrl,
        env: { LATTICE_DB_STATEMENT_TIMEOUT: '2000', LATTICE_DB_ACQUIRE_TIMEOUT: '1000', LATTICE_DB_POOL_SIZE: '4' },
      });
      const created = await server.fhir('POST', '/Patient', { body: { resourceType: 'Patient', name: [{ family: 'Before' }] } });
      assert.equal(created.status, 201, created.text);
      patientId = created.body.id;
      const unread = await server.fhir('POST', '/Patient', { body: { resourceType: 'Patient', name: [{ family: 'Unread' }] } });
      unreadId = unread.body.id;
      client = await createClient(server, server.projectId as string);
    });
    after(async () => {
      cluster?.thaw();
      await server?.stop();
      cluster?.destroy();
    });

    /** 24 requests at once, reads and writes, while the database is out. */
    function load(): Array<Promise<ApiResponse>> {
      return Array.from({ length: 24 }, (_, i) =>
        i % 2 === 0
          ? server.fhir('GET', `/Patient/${patientId}`)
          : server.fhir('POST', '/Patient', { body: { resourceType: 'Patient', name: [{ family: `During${i}` }] } }),
      );
    }

    async function recovers(): Promise<void> {
      const start = Date.now();
      for (;;) {
        const res = await server.fhir('POST', '/Patient', { body: { resourceType: 'Patient', name: [{ family: 'After' }] } });
        if (res.status === 201) break;
        assertUnavailable(res, 'while recovering');
        assert.ok(Date.now() - start < DEADLINE_MS, 'Lattice did not recover');
        await sleep(500);
      }
      const health = await server.request('GET', '/healthz', { token: null });
      assert.equal(health.status, 200, health.text);
      const { pid, ...body } = health.body;
      assert.equal(typeof pid, 'number', 'the process that answered');
      assert.deepEqual(body, { status: 'ok', database: { driver: 'pg', state: 'ok' } });
      assert.equal((await server.fhir('GET', `/Patient/${patientId}`)).status, 200);
    }

    test('frozen (SIGSTOP): clean 503s, /healthz unavailable, served again after SIGCONT', async () => {
      cluster.freeze();
      try {
        const requests = load();
        await sleep(300);
        const health = await answersBy('/healthz', server.request('GET', '/healthz', { token: null }));
        assert.equal(health.status, 503, health.text);
        const { pid: _pid, ...body } = health.body;
        assert.deepEqual(body, { status: 'unavailable', database: { driver: 'pg', state: 'unavailable' } });
        const answers = await answersBy('requests', Promise.all(requests));
        answers.forEach((res, i) => assertUnavailable(res, `request ${i}`));
      } finally {
        cluster.thaw();
      }
      await recovers();
    });

    /**
     * Each kind of request, once the caches are warm: before, a read of a cached row, `$lookup`
     * and `/auth/me` waited on the listening connection's barrier for the whole freeze (70 s and
     * 150 s in the issue's runs; here: until the 60 s deadline of this test).
     */
    test('frozen (SIGSTOP): every kind of request answers 503 (cached read, uncached read, search, create, $lookup, /auth/me, token)', async () => {
      const lookup = '/CodeSystem/$lookup?system=http://hl7.org/fhir/administrative-gender&code=male';
      // Warm: the patient's row, the membership, the code system's index are in memory.
      assert.equal((await server.fhir('GET', `/Patient/${patientId}`)).status, 200);
      assert.equal((await server.fhir('GET', lookup)).status, 200);
      assert.equal((await server.request('GET', '/auth/me')).status, 200);
      const kinds: Array<[string, () => Promise<ApiResponse>]> = [
        ['read (cached)', () => server.fhir('GET', `/Patient/${patientId}`)],
        ['read (uncached)', () => server.fhir('GET', `/Patient/${unreadId}`)],
        ['search', () => server.fhir('GET', '/Patient?name=Before')],
        ['create', () => server.fhir('POST', '/Patient', { body: { resourceType: 'Patient', name: [{ family: 'Frozen' }] } })],
        ['$lookup', () => server.fhir('GET', lookup)],
        ['/auth/me', () => server.request('GET', '/auth/me')],
        ['token', () => tokenRequest(server, { grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.secret })],
      ];
      cluster.freeze();
      try {
        const answers = await Promise.all(
          kinds.map(async ([what, send]) => {
            const started = Date.now();
            const res = await answersBy(what, send());
            return { what, res, ms: Date.now() - started };
          }),
        );
        for (const { what, res } of answers) assertUnavailable(res, what);
        // Measured, not asserted (docs/errors.md#database-limits): reported in the test log.
        console.log(`frozen PostgreSQL: ${answers.map(({ what, ms }) => `${what} ${ms} ms`).join(', ')}`);
      } finally {
        cluster.thaw();
      }
      await recovers();
      for (const [what, send] of kinds) assert.ok([200, 201].includes((await send()).status), `${what} after the freeze`);
    });

    /**
     * Issue 32 finding 8: against a frozen server a request waited twice — behind the listening
     * connection's barrier, then (the barrier lost, the connection dropped) for a pooled
     * connection: 10 s + 10 s with the defaults. Now each request waits once, and its 503 names
     * the wait (diagnostics): requests that queue behind one unanswered barrier all answer with
     * that barrier's wait, none goes on to wait for the pool.
     */
    test('frozen (SIGSTOP): requests behind the listening barrier wait once, and their 503 names that wait', async () => {
      const databaseUrl = server.config.databaseUrl as string;
      // A wider waiting limit than the suite's server: every request below reaches the barrier
      // while the first one is still unanswered, however slow this machine is.
      const node = await startServer('pg', { databaseUrl, env: { LATTICE_DB_STATEMENT_TIMEOUT: '2000', LATTICE_DB_ACQUIRE_TIMEOUT: '3000', LATTICE_DB_POOL_SIZE: '4' } });
      try {
        const own = await node.fhir('POST', '/Patient', { body: { resourceType: 'Patient', name: [{ family: 'Before' }] } });
        assert.equal(own.status, 201, own.text);
        // Warm: the membership and the patient's row are cached, so every request asks the barrier.
        assert.equal((await node.fhir('GET', `/Patient/${own.body.id}`)).status, 200);
        assert.equal((await node.fhir('GET', '/Patient?name=Before')).status, 200);
        cluster.freeze();
        let answers: ApiResponse[];
        try {
          answers = await answersBy(
            'requests',
            Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? node.fhir('GET', `/Patient/${own.body.id}`) : node.fhir('GET', '/Patient?name=Before')))),
          );
        } finally {
          cluster.thaw();
        }
        answers.forEach((res, i) => assertUnavailable(res, `request ${i}`));
        assert.deepEqual(
          answers.map((res) => res.body.issue[0].diagnostics),
          answers.map(() => 'no answer on the listening connection within 3000 ms (LATTICE_DB_ACQUIRE_TIMEOUT)'),
        );
      } finally {
        await node.stop();
      }
      await recovers();
    });

    test('frozen (SIGSTOP): a barrier queued behind an unanswered one is not a second wait: both callers get the first 503', async () => {
      const listener = new Listener(cluster.url, new Map(), 1000);
      try {
        await listener.listen('lattice_test_queue', () => undefined);
        await listener.caughtUp();
        cluster.freeze();
        try {
          const first = listener.caughtUp().then(() => 'answered', (err: unknown) => err);
          // The callers of one turn share a barrier: the second comes after the first was sent.
          await new Promise((resolve) => setImmediate(resolve));
          const queued = listener.caughtUp().then(() => 'answered', (err: unknown) => err);
          const [a, b] = await answersBy('barriers', Promise.all([first, queued]));
          // Before: the queued caller got NotListening (the connection dropped) and went on to read the database: a second wait.
          assert.ok(a instanceof FhirError && b instanceof FhirError, `two 503s, not ${String(a)} and ${String(b)}`);
          for (const err of [a, b]) {
            assert.equal(err.status, 503);
            assert.equal(err.outcome.issue[0].diagnostics, 'no answer on the listening connection within 1000 ms (LATTICE_DB_ACQUIRE_TIMEOUT)');
          }
        } finally {
          cluster.thaw();
        }
      } finally {
        listener.close();
      }
    });

    test('stopped: clean 503s, /healthz unavailable, served again once it is started', async () => {
      cluster.stop();
      try {
        const [health, ...answers] = await answersBy('requests', Promise.all([server.request('GET', '/healthz', { token: null }), ...load()]));
        assert.equal(health.status, 503, health.text);
        assert.equal(health.body.database.state, 'unavailable');
        answers.forEach((res, i) => assertUnavailable(res, `request ${i}`));
      } finally {
        cluster.start();
      }
      await recovers();
    });
  });
}
