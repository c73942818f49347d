import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { projectRoot } from '../src/paths.js';
import { DataFolderInUse } from '../src/storage/data-folder-lock.js';
import { openPgliteDatabase } from '../src/storage/pglite-database.js';
import { latticeArgs } from './support/cli.js';

/**
 * One owner per embedded data folder (docs/errors.md#data-folder). Two processes on one PGlite
 * folder destroyed data before: now the second is refused with the owner's PID, a lock left by
 * a killed process is taken over, and `lattice import` beside a running owner fails cleanly.
 */

/** Starts a process that opens `dir` and holds it; resolves once it has. */
async function holder(dir: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/hold-data-folder.ts', dir], {
    cwd: projectRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr?.on('data', (d) => (err += String(d)));
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (d) => {
      if (String(d).includes('ready')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`holder exited ${code}: ${err}`)));
  });
  return child;
}

async function killed(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

describe('embedded data folder: one owner at a time', () => {
  test('a second process is refused with the owner PID; after kill -9 the folder opens with its data', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-lock-'));
    try {
      const child = await holder(dir);
      await assert.rejects(openPgliteDatabase(dir), (err: unknown) => {
        assert.ok(err instanceof DataFolderInUse, String(err));
        assert.equal(err.pid, child.pid);
        assert.match(err.message, new RegExp(`is in use by process ${child.pid}`));
        return true;
      });
      await killed(child); // its lock file stays behind: stale
      const db = await openPgliteDatabase(dir);
      try {
        const rows = (await db.query<{ pid: number }>('SELECT pid FROM held')).rows;
        assert.deepEqual(rows, [{ pid: child.pid }]);
      } finally {
        await db.close();
      }
      // Closed cleanly: the next opener needs no stale-lock recovery.
      const again = await openPgliteDatabase(dir);
      await again.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the same process cannot open one folder twice', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-lock-'));
    try {
      const db = await openPgliteDatabase(dir);
      try {
        await assert.rejects(openPgliteDatabase(dir), (err: unknown) => err instanceof DataFolderInUse && err.pid === process.pid);
      } finally {
        await db.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('lattice import beside a running owner exits 1 with the reason, and changes nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-lock-'));
    try {
      const data = join(dir, 'data');
      const child = await holder(data);
      try {
        const file = join(dir, 'cs.json');
        writeFileSync(file, JSON.stringify({ resourceType: 'CodeSystem', url: 'http://example.org/cs/lock', status: 'active', content: 'complete', concept: [{ code: 'a' }] }));
        const run = spawnSync(process.execPath, latticeArgs('import', file), {
          cwd: projectRoot,
          env: { ...process.env, LOG_LEVEL: 'warn', LATTICE_DATA_DIR: data, LATTICE_ADMIN_PASSWORD: 'admin-password-123' },
          encoding: 'utf8',
        });
        assert.equal(run.status, 1, run.stdout + run.stderr);
        assert.match(run.stderr, new RegExp(`The data folder .* is in use by process ${child.pid}`));
        assert.doesNotMatch(run.stderr, /\n\s+at /, 'a reason, not a stack trace');
      } finally {
        await killed(child);
      }
      const db = await openPgliteDatabase(data);
      try {
        assert.deepEqual((await db.query('SELECT pid FROM held')).rows.length, 1);
      } finally {
        await db.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
