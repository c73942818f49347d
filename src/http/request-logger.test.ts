import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import pino from 'pino';
import { requestLogger } from './request-logger.js';

function logged(level: string): { lines: Array<Record<string, unknown>>; logger: pino.Logger } {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: pino({ level }, stream) };
}

test('a request logger logs what pino’s child would: the levels that are on, with the request id', async () => {
  const { lines, logger } = logged('warn');
  const log = requestLogger(logger, { reqId: 'r-1' }, {});
  log.info('not at this level');
  log.debug({ a: 1 }, 'nor this');
  log.warn({ detail: 2 }, 'slow');
  log.error(new Error('boom'), 'failed');
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(
    lines.map((l) => [l.level, l.msg, l.reqId]),
    [
      [40, 'slow', 'r-1'],
      [50, 'failed', 'r-1'],
    ],
  );
  assert.equal(lines[0].detail, 2);
  assert.equal((lines[1].err as { message: string }).message, 'boom');
  assert.equal(log.level, 'warn');
  assert.equal(log.isLevelEnabled('info'), false);
  assert.equal(log.isLevelEnabled('error'), true);
});

test('a request logger’s own children and level follow pino’s', async () => {
  const { lines, logger } = logged('info');
  const log = requestLogger(logger, { reqId: 'r-2' }, {});
  log.child({ part: 'x' }).info('from a child');
  log.level = 'error';
  log.warn('now off');
  assert.equal(logger.level, 'info', 'the parent keeps its level');
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(
    lines.map((l) => [l.msg, l.reqId, l.part]),
    [['from a child', 'r-2', 'x']],
  );
  // A route with log options of its own gets pino's child as is.
  const own = requestLogger(logger, { reqId: 'r-3' }, { level: 'debug' });
  assert.equal(own.level, 'debug');
});
