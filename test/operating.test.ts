import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { projectRoot } from '../src/paths.js';
import { createTestDatabase, drivers, loginAs, startServer } from './harness.js';
import { latticeArgs } from './support/cli.js';

/**
 * docs/operating.md, run as written: a backup restored reads its data back (PGlite: the stopped
 * folder copied; PostgreSQL: pg_dump / pg_restore), and `lattice copy-to-postgres` moves a
 * PGlite folder's data to PostgreSQL.
 */

/** A PostgreSQL client tool of the same installation as the test server (pg_config --bindir), else from the PATH. */
function pgTool(name: string): string {
  const bindir = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' }).stdout?.trim();
  const inBindir = bindir ? join(bindir, name) : undefined;
  return inBindir && existsSync(inBindir) ? inBindir : name;
}

const patient = { resourceType: 'Patient', name: [{ family: 'Backed-up' }], birthDate: '1970-01-01' };

describe('backup and restore (docs/operating.md#backup-and-restore)', () => {
  test('PGlite: a copy of the stopped data folder restores the data', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-backup-'));
    try {
      const dataDir = join(dir, 'data');
      const first = await startServer('pglite', { dataDir });
      const created = (await first.fhir('POST', '/Patient', { body: patient })).body;
      await first.stop();
      cpSync(dataDir, join(dir, 'backup'), { recursive: true });
      // The data is lost after the backup…
      const again = await startServer('pglite', { dataDir });
      assert.equal((await again.fhir('DELETE', `/Patient/${created.id}`, { token: again.adminToken })).status, 200);
      await again.stop();
      // …and the restored folder has it.
      rmSync(dataDir, { recursive: true });
      cpSync(join(dir, 'backup'), dataDir, { recursive: true });
      const restored = await startServer('pglite', { dataDir });
      try {
        // As the super admin: each harness start makes a new default project; the patient is the first one's.
        const read = await restored.fhir('GET', `/Patient/${created.id}`, { token: restored.adminToken });
        assert.equal(read.status, 200, read.text);
        assert.equal(read.body.name[0].family, 'Backed-up');
      } finally {
        await restored.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  if (drivers.includes('pg')) {
    test('PostgreSQL: pg_dump -Fc restored with pg_restore into a new database', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'lattice-backup-'));
      try {
        const databaseUrl = await createTestDatabase();
        const server = await startServer('pg', { databaseUrl });
        const created = (await server.fhir('POST', '/Patient', { body: patient })).body;
        await server.stop();
        const dump = join(dir, 'lattice.dump');
        const dumped = spawnSync(pgTool('pg_dump'), ['--format=custom', '--no-owner', `--file=${dump}`, databaseUrl], { encoding: 'utf8' });
        assert.equal(dumped.status, 0, dumped.stderr);
        const restoredUrl = await createTestDatabase();
        const restoredRun = spawnSync(pgTool('pg_restore'), ['--no-owner', '--exit-on-error', `--dbname=${restoredUrl}`, dump], { encoding: 'utf8' });
        assert.equal(restoredRun.status, 0, restoredRun.stderr);
        const restored = await startServer('pg', { databaseUrl: restoredUrl });
        try {
          // As the super admin: each harness start makes a new default project; the patient is the first one's.
        const read = await restored.fhir('GET', `/Patient/${created.id}`, { token: restored.adminToken });
          assert.equal(read.status, 200, read.text);
          assert.equal(read.body.name[0].family, 'Backed-up');
        } finally {
          await restored.stop();
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    test('lattice copy-to-postgres moves a PGlite folder to PostgreSQL: resources, history, accounts', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'lattice-move-'));
      try {
        const dataDir = join(dir, 'data');
        const embedded = await startServer('pglite', { dataDir });
        const created = (await embedded.fhir('POST', '/Patient', { body: patient })).body;
        await embedded.fhir('PUT', `/Patient/${created.id}`, { body: { ...created, birthDate: '1970-01-02' } });
        await embedded.stop();
        const target = await createTestDatabase();
        const env = { ...process.env, LATTICE_DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: 'warn' };
        const copy = spawnSync(process.execPath, latticeArgs('copy-to-postgres', '--to', target), { cwd: projectRoot, env, encoding: 'utf8' });
        assert.equal(copy.status, 0, copy.stderr);
        assert.match(copy.stdout, /^copied \d+ rows of \d+ tables from /);
        const moved = await startServer('pg', { databaseUrl: target });
        try {
          // The super admin's password came along (the harness logged in with it), and the data.
          await loginAs(moved, 'admin@example.com', 'admin-password-123');
          const token = moved.adminToken;
          const read = await moved.fhir('GET', `/Patient/${created.id}`, { token });
          assert.equal(read.status, 200, read.text);
          assert.equal(read.body.birthDate, '1970-01-02');
          assert.equal((await moved.fhir('GET', `/Patient/${created.id}/_history`, { token })).body.total, 2);
          assert.equal((await moved.fhir('GET', '/Patient?family=backed-up', { token })).body.total, 1);
          // A new resource still gets written (identities and indexes continue).
          assert.equal((await moved.fhir('POST', '/Patient', { body: patient })).status, 201);
        } finally {
          await moved.stop();
        }
        // Copying again into a database that holds resources is refused.
        const again = spawnSync(process.execPath, latticeArgs('copy-to-postgres', '--to', target), { cwd: projectRoot, env, encoding: 'utf8' });
        assert.equal(again.status, 1);
        assert.match(again.stderr, /already holds Lattice resources: copy into a new, empty database/);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});

for (const driver of drivers) {
  describe(`installations (${driver})`, () => {
    test('every new database gets its own super-admin project id', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'lattice-install-'));
      try {
        const projectOf = async (n: number) => {
          const storage = driver === 'pg' ? { databaseUrl: await createTestDatabase() } : { dataDir: join(dir, `data-${n}`) };
          const server = await startServer(driver, storage);
          try {
            const me = await server.request('GET', '/auth/me', { token: server.adminToken });
            assert.equal(me.body.project.superAdmin, true);
            return me.body.project.id as string;
          } finally {
            await server.stop();
          }
        };
        const [a, b] = [await projectOf(1), await projectOf(2)];
        assert.match(a, /^[0-9a-f-]{36}$/);
        assert.notEqual(a, b);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}
