import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { openPgliteDatabase } from '../src/storage/pglite-database.js';
import { PGLITE_START_PARAMS, startEarlyPglite, takeEarlyPglite } from '../src/storage/pglite-early.js';

/**
 * The embedded database's thread started before the server's code is loaded (docs/errors.md#start-up):
 * the database driver takes it for the folder it was started on, ends it for any other, and
 * the folder's lock goes with it. (The command entry that starts it, src/launch.ts, runs in every
 * test that starts `lattice serve` on a data folder: test/data-folder.test.ts, test/restart.test.ts.)
 */
const pglite = import.meta.resolve('@electric-sql/pglite');
const folders: string[] = [];
const folder = () => {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-early-'));
  folders.push(dir);
  return join(dir, 'data');
};
after(() => folders.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

describe('PGlite started early', () => {
  test('the driver opens its folder on the thread started for it, and holds the folder lock', async () => {
    const dataDir = folder();
    startEarlyPglite(dataDir, pglite);
    assert.equal(readFileSync(join(dataDir, 'lattice.pid'), 'utf8').trim(), String(process.pid));
    const db = await openPgliteDatabase(dataDir);
    try {
      // Taken: nothing is left to take.
      assert.equal(await takeEarlyPglite(dataDir, PGLITE_START_PARAMS), undefined);
      assert.deepEqual((await db.query<{ n: number }>('SELECT 41 + 1 AS n')).rows, [{ n: 42 }]);
      assert.ok(existsSync(join(dataDir, 'lattice.pid')));
    } finally {
      await db.close();
    }
    assert.ok(!existsSync(join(dataDir, 'lattice.pid')), 'the lock is released on close');
  });

  test('a thread started for another folder is ended and its lock released; the configured folder is opened', async () => {
    const early = folder();
    const configured = folder();
    startEarlyPglite(early, pglite);
    assert.ok(existsSync(join(early, 'lattice.pid')));
    const db = await openPgliteDatabase(configured);
    try {
      assert.ok(!existsSync(join(early, 'lattice.pid')), 'the early folder is unlocked');
      assert.ok(existsSync(join(configured, 'lattice.pid')));
      assert.deepEqual((await db.query<{ n: number }>('SELECT 1 AS n')).rows, [{ n: 1 }]);
    } finally {
      await db.close();
    }
  });

  test('other start parameters: the early thread is not used', async () => {
    const dataDir = folder();
    startEarlyPglite(dataDir, pglite);
    assert.equal(await takeEarlyPglite(dataDir, [...PGLITE_START_PARAMS, '-c', 'work_mem=8MB']), undefined);
    assert.ok(!existsSync(join(dataDir, 'lattice.pid')), 'ended and unlocked');
  });

  test('a folder another process holds: nothing is started, the driver reports the owner', async () => {
    const dataDir = folder();
    mkdirSync(dataDir);
    // The lock of a running process (this test's parent: alive, not this process).
    writeFileSync(join(dataDir, 'lattice.pid'), `${process.ppid}\n`);
    startEarlyPglite(dataDir, pglite);
    assert.equal(await takeEarlyPglite(dataDir, PGLITE_START_PARAMS), undefined, 'no thread was started');
    await assert.rejects(openPgliteDatabase(dataDir), (err: Error) => err.message.includes(`in use by process ${process.ppid}`));
    assert.equal(readFileSync(join(dataDir, 'lattice.pid'), 'utf8').trim(), String(process.ppid), 'the owner keeps its lock');
  });
});
