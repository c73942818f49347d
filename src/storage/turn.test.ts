import assert from 'node:assert/strict';
import { test } from 'node:test';
import { endOfTurn } from './turn.js';

test('endOfTurn: one promise for the callers of a turn, settled after the turn\'s callbacks; the next turn has its own', async () => {
  const order: string[] = [];
  setImmediate(() => order.push('queued before'));
  const first = endOfTurn();
  assert.equal(endOfTurn(), first);
  await first.then(() => order.push('end of turn'));
  assert.deepEqual(order, ['queued before', 'end of turn']);
  const next = endOfTurn();
  assert.notEqual(next, first);
  await next;
});
