import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { drivers, testDatabaseServerUrl } from './harness.js';
import { Listener } from '../src/storage/pg-listener.js';

/**
 * The barrier of a PostgreSQL node's listening connection (`Database.caughtUp`,
 * docs/rest.md#read-cache): a cached answer is used only once every change committed before
 * the request has been heard. On the suite's PostgreSQL, with a real listening connection; the
 * statements the listener sends are counted by watching pg's own `Client.query`.
 */
if (drivers.includes('pg')) {
  describe('PostgreSQL listening barrier', () => {
    const channel = `lattice_test_barrier_${randomBytes(4).toString('hex')}`;
    const heard: string[] = [];
    let listener: Listener;
    let other: pg.Client;
    const sent: string[] = [];
    type Query = (this: pg.Client, ...args: unknown[]) => unknown;
    const proto = pg.Client.prototype as unknown as { query: Query };
    const query = proto.query;

    before(async () => {
      listener = new Listener(testDatabaseServerUrl(), new Map(), 5000);
      await listener.listen(channel, (payload) => heard.push(payload));
      other = new pg.Client({ connectionString: testDatabaseServerUrl() });
      await other.connect();
      // Counts what the listening connection sends (every other client is left alone).
      proto.query = function (this: pg.Client, ...args: unknown[]) {
        const name = (this as unknown as { connectionParameters: { application_name?: string } }).connectionParameters.application_name ?? '';
        if (name.startsWith('lattice-listen:') && typeof args[0] === 'string') sent.push(args[0]);
        return query.apply(this, args);
      };
    });
    after(async () => {
      proto.query = query;
      listener.close();
      await other.end();
    });

    test('the callers of one turn of the event loop share one barrier, whenever each arrived in it', async () => {
      await listener.caughtUp();
      sent.length = 0;
      // Ten requests read in one poll: each arrives (its `since`) after the one before it.
      const waits = Array.from({ length: 10 }, () => listener.caughtUp(performance.now()));
      await Promise.all(waits);
      // Before: the first caller sent its barrier at once, the nine after it had arrived later
      // than it was sent and waited for a second one.
      assert.deepEqual(sent, ['']);
    });

    test('a caller arriving after the barrier was sent waits for the next one', async () => {
      sent.length = 0;
      const first = listener.caughtUp(performance.now());
      await new Promise((resolve) => setImmediate(resolve)); // the first barrier goes
      assert.deepEqual(sent, ['']);
      const later = listener.caughtUp(performance.now());
      await Promise.all([first, later]);
      assert.deepEqual(sent, ['', '']);
    });

    test('a change committed before the call is heard before the barrier answers, also while an earlier barrier is in flight', async () => {
      for (let i = 0; i < 25; i++) {
        const earlier = listener.caughtUp(performance.now());
        if (i % 2 === 1) await new Promise((resolve) => setImmediate(resolve)); // sent, maybe not answered
        await other.query(`SELECT pg_notify($1, $2)`, [channel, `change ${i}`]);
        await listener.caughtUp(performance.now());
        assert.ok(heard.includes(`change ${i}`), `change ${i} heard before the barrier answered (heard: ${heard.slice(-3).join(', ')})`);
        await earlier;
      }
    });
  });
}
