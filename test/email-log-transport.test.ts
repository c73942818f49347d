import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { projectRoot } from '../src/paths.js';

/** The development e-mail transport (no SMTP_URL) writes each message before it counts as sent. */
describe('log e-mail transport', () => {
  test('a message is on standard error even when the process is killed right after sending', () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'test/support/log-email-then-die.ts'], { cwd: projectRoot, encoding: 'utf8' });
    assert.equal(run.signal, 'SIGKILL', run.stderr);
    const line = run.stderr.split('\n').find((l) => l.includes('e-mail (SMTP_URL not set)'));
    assert.ok(line, `no e-mail line in: ${run.stderr}`);
    const parsed = JSON.parse(line) as { email: { id: string; to: string; subject: string } };
    assert.deepEqual([parsed.email.id, parsed.email.to, parsed.email.subject], ['m-1', 'ada@example.com', 'Welcome']);
  });
});
