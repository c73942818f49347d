import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, mock, test } from 'node:test';
import { ANALYZE_DELAY_MS, ANALYZE_SHARE, autoAnalyze } from './pglite-analyze.js';

/** Lets the check's awaited statements (resolved promises) run; setImmediate is not faked. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('background ANALYZE on PGlite', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout'] }));
  afterEach(() => mock.timers.reset());

  test('after a check whose statements ran long, the next waits so the checks keep to their share of the database thread', async () => {
    const statements: string[] = [];
    const analyzeMs = 2000;
    // Every check finds one stale table; its ANALYZE "runs" 2 s on the database thread.
    const analyzer = autoAnalyze(async (sql) => {
      statements.push(sql.includes('ANALYZE') ? sql : 'check');
      return sql.includes('ANALYZE') ? { rows: [], ms: analyzeMs } : { rows: [{ name: 'search_string' }], ms: 0 };
    }, (err) => assert.fail(String(err)));
    try {
      analyzer.noteWrite();
      mock.timers.tick(ANALYZE_DELAY_MS);
      for (let i = 0; i < 5; i++) await settle();
      assert.deepEqual(statements, ['check', 'ANALYZE search_string']);

      // Writes go on: the next check is not one second later but when the first one's 2 s are 10 %.
      analyzer.noteWrite();
      mock.timers.tick(ANALYZE_DELAY_MS);
      for (let i = 0; i < 5; i++) await settle();
      assert.deepEqual(statements, ['check', 'ANALYZE search_string'], 'no second check a second after the first');
      mock.timers.tick((analyzeMs * (1 - ANALYZE_SHARE)) / ANALYZE_SHARE - ANALYZE_DELAY_MS);
      for (let i = 0; i < 5; i++) await settle();
      assert.deepEqual(statements, ['check', 'ANALYZE search_string', 'check', 'ANALYZE search_string']);
    } finally {
      analyzer.stop();
    }
  });

  test('cheap checks still run a second after the writes', async () => {
    const statements: string[] = [];
    const analyzer = autoAnalyze(async () => {
      statements.push('check');
      return { rows: [], ms: 5 };
    }, (err) => assert.fail(String(err)));
    try {
      for (let round = 1; round <= 2; round++) {
        analyzer.noteWrite();
        mock.timers.tick(ANALYZE_DELAY_MS);
        for (let i = 0; i < 5; i++) await settle();
        assert.equal(statements.length, round);
      }
    } finally {
      analyzer.stop();
    }
  });
});
