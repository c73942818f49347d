import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { projectRoot } from '../src/paths.js';
import { createTestDatabase, drivers, loginAs, startServer, type StartOptions, type TestServer } from './harness.js';
import { latticeArgs } from './support/cli.js';

/** `lattice admin set-password`: the recovery for a lost password, checked by logging in over HTTP. */
for (const driver of drivers) {
  describe(`lattice admin set-password (${driver})`, () => {
    test('sets the password from --password, from standard input, or generates one; each works for a login', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'lattice-cli-admin-'));
      try {
        const storage: StartOptions = driver === 'pg' ? { databaseUrl: await createTestDatabase() } : { dataDir: join(dir, 'data') };
        const cli = (args: string[], input = '') =>
          spawnSync(process.execPath, latticeArgs('admin', 'set-password', ...args), {
            cwd: projectRoot,
            input,
            encoding: 'utf8',
            env: {
              ...process.env,
              LOG_LEVEL: 'warn',
              ...(storage.databaseUrl ? { DATABASE_URL: storage.databaseUrl } : { LATTICE_DATA_DIR: storage.dataDir }),
            },
          });
        // The server started once (first start: the super admin with the harness's password).
        const first = await startServer(driver, storage);
        await first.stop();

        // With the server stopped (a PGlite folder has one user at a time), set the password.
        const set = cli(['Admin@Example.com', '--password', 'recovered-password-1']);
        assert.equal(set.status, 0, set.stderr);
        assert.equal(set.stdout.trim(), 'Password of admin@example.com set.');

        const piped = cli(['admin@example.com'], 'piped-password-2\n');
        assert.equal(piped.status, 0, piped.stderr);

        const generated = cli(['admin@example.com']);
        assert.equal(generated.status, 0, generated.stderr);
        const password = /^New password of admin@example\.com: (\S+)$/m.exec(generated.stdout)?.[1];
        assert.ok(password && password.length >= 12, generated.stdout);

        // No harness login (its password is gone): log in over HTTP with the generated one.
        const server: TestServer = await startServer(driver, { ...storage, env: { LATTICE_ADMIN_PASSWORD: '' } });
        try {
          const token = await loginAs(server, 'admin@example.com', password);
          const me = await server.request('GET', '/auth/me', { token });
          assert.equal(me.status, 200, me.text);
          assert.equal(me.body.project.superAdmin, true);
          assert.match(me.body.project.id, /^[0-9a-f-]{36}$/);
          for (const old of ['admin-password-123', 'recovered-password-1', 'piped-password-2']) {
            await assert.rejects(loginAs(server, 'admin@example.com', old), /failed: 400 .*Email or password is invalid/);
          }
        } finally {
          await server.stop();
        }

        const unknown = cli(['nobody@example.com', '--password', 'whatever-123']);
        assert.equal(unknown.status, 1);
        assert.match(unknown.stderr, /No user logs in with nobody@example.com/);
        const short = cli(['admin@example.com', '--password', 'short']);
        assert.equal(short.status, 1);
        assert.match(short.stderr, /at least 8 characters/);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    test('without an e-mail it prints the usage and exits 2', () => {
      const run = spawnSync(process.execPath, latticeArgs('admin', 'set-password'), { cwd: projectRoot, encoding: 'utf8' });
      assert.equal(run.status, 2);
      assert.match(run.stderr, /lattice admin set-password <email>/);
    });
  });
}
