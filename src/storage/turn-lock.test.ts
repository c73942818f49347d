import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FOREGROUND_STREAK, TurnLock } from './turn-lock.js';

const busy = () => new Error('busy');

/** Queues `who` on `lock`; each records its name when granted and releases at once. */
function queue(lock: TurnLock, order: string[], who: string, background: boolean): Promise<void> {
  return lock.acquire(0, busy, background).then((release) => {
    order.push(who);
    release();
  });
}

describe('TurnLock', () => {
  test('requests are served first come, first served', async () => {
    const lock = new TurnLock();
    const order: string[] = [];
    const release = await lock.acquire(0, busy);
    const done = ['a', 'b', 'c'].map((w) => queue(lock, order, w, false));
    release();
    await Promise.all(done);
    assert.deepEqual(order, ['a', 'b', 'c']);
  });

  test('background work waits behind requests queued after it', async () => {
    const lock = new TurnLock();
    const order: string[] = [];
    const release = await lock.acquire(0, busy);
    const done = [queue(lock, order, 'index', true), queue(lock, order, 'request 1', false), queue(lock, order, 'request 2', false)];
    release();
    await Promise.all(done);
    assert.deepEqual(order, ['request 1', 'request 2', 'index']);
  });

  test(`background work is not starved: it gets a turn after ${FOREGROUND_STREAK} request turns in a row`, async () => {
    const lock = new TurnLock();
    const order: string[] = [];
    const release = await lock.acquire(0, busy);
    const done = [queue(lock, order, 'index', true)];
    for (let i = 1; i <= FOREGROUND_STREAK + 2; i++) done.push(queue(lock, order, `r${i}`, false));
    release();
    await Promise.all(done);
    assert.equal(order.indexOf('index'), FOREGROUND_STREAK);
    assert.equal(order.length, FOREGROUND_STREAK + 3);
  });

  test('a waiter that times out leaves its queue', async () => {
    const lock = new TurnLock();
    const release = await lock.acquire(0, busy);
    await assert.rejects(lock.acquire(20, busy, true), /busy/);
    await assert.rejects(lock.acquire(20, busy), /busy/);
    release();
    assert.equal(lock.heldForMs(), undefined); // nobody left waiting: the lock is free
  });
});
