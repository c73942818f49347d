import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { projectRoot } from '../src/paths.js';
import { createClient, createProject, drivers, sharedStorage, startServer } from './harness.js';
import { importAsync, latticeArgs } from './support/cli.js';

/** The command line helps (src/cli/README.md): help and version exit 0, refusals name the fix. */
const run = (args: string[], env: NodeJS.ProcessEnv = process.env) => spawnSync(process.execPath, latticeArgs(...args), { cwd: projectRoot, env, encoding: 'utf8' });

describe('lattice --help, --version, <command> --help', () => {
  const version = (JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { version: string }).version;

  test('every spelling of help prints the usage and the environment variables, exit 0', () => {
    // Every variable the configuration reads is listed.
    const configured = [...new Set([...readFileSync(join(projectRoot, 'src/config.ts'), 'utf8').matchAll(/env\.([A-Z_]+)/g)].map((m) => m[1]))];
    assert.ok(configured.length > 30, `${configured.length} variables found in src/config.ts`);
    for (const args of [['--help'], ['-h'], ['help']]) {
      const out = run(args);
      assert.equal(out.status, 0, `${args.join(' ')}: ${out.stderr}`);
      assert.match(out.stdout, /Usage:\n {2}lattice serve/);
      assert.match(out.stdout, /lattice import <file>/);
      assert.match(out.stdout, /lattice admin set-password/);
      for (const name of [...configured, 'LATTICE_TOKEN', 'LATTICE_CLIENT_ID', 'LATTICE_CLIENT_SECRET']) assert.ok(out.stdout.includes(name), `${args.join(' ')} lists ${name}`);
      assert.equal(out.stderr, '');
    }
  });

  test('the command entry runs as an executable, as the package\'s bin (dist/lattice.js) is run', () => {
    const bundle = process.env.LATTICE_TEST_CLI;
    if (!bundle) {
      // Outside `npm test` there is no built entry: its source must start with the interpreter line.
      assert.match(readFileSync(join(projectRoot, 'src/launch.ts'), 'utf8'), /^#!\/usr\/bin\/env node\n/);
      return;
    }
    const out = spawnSync(bundle, ['--version'], { cwd: projectRoot, encoding: 'utf8' });
    assert.equal(out.error, undefined, String(out.error));
    assert.equal(out.status, 0, out.stderr);
    assert.ok(out.stdout.includes(version), out.stdout);
  });

  test('<command> --help and help <command> print that command only; --version the version', () => {
    for (const args of [['import', '--help'], ['import', '-h'], ['help', 'import'], ['import', 'x.ndjson', '--help']]) {
      const out = run(args);
      assert.equal(out.status, 0, `${args.join(' ')}: ${out.stderr}`);
      assert.match(out.stdout, /lattice import <file> --url <server>/);
      assert.doesNotMatch(out.stdout, /lattice admin set-password/);
      assert.match(out.stdout, /LATTICE_IMPORT_BATCH/);
    }
    const admin = run(['admin', '--help']);
    assert.equal(admin.status, 0);
    assert.match(admin.stdout, /lattice admin set-password <email>/);
    assert.doesNotMatch(admin.stdout, /lattice import <file>/);
    const ver = run(['--version']);
    assert.equal(ver.status, 0);
    assert.equal(ver.stdout.trim(), `lattice ${version}`);
    // Still an error: an unknown command.
    const unknown = run(['frobnicate']);
    assert.equal(unknown.status, 2);
    assert.match(unknown.stderr, /Unknown command 'frobnicate'/);
  });
});

for (const driver of drivers) {
  describe(`lattice refusals name the fix (${driver})`, () => {
    test('a 403 of a --url import names the admin role the client needs', async () => {
      const server = await startServer(driver);
      const dir = mkdtempSync(join(tmpdir(), 'lattice-cli-help-'));
      try {
        const project = await createProject(server, 'CLI 403');
        const client = await createClient(server, project.projectId);
        const file = join(dir, 'cs.ndjson');
        writeFileSync(file, JSON.stringify({ resourceType: 'CodeSystem', url: 'http://example.org/cli-403', status: 'active', content: 'complete', concept: [{ code: 'a' }] }) + '\n');
        const out = await importAsync([file, '--url', server.baseUrl, '--client-id', client.clientId, '--client-secret', client.secret, '--project', project.projectId]);
        assert.equal(out.code, 1, out.stderr);
        assert.match(out.stderr, /The server refused the import \(403\)/);
        assert.ok(out.stderr.includes(`Importing into project ${project.projectId} needs an admin of that project`), out.stderr);
        assert.ok(out.stderr.includes('"admin": true'), out.stderr);
      } finally {
        await server.stop();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}

describe('lattice import beside a running server, and without e-mail', () => {
  test('a direct import into a PGlite folder in use is refused naming --url', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-cli-help-'));
    const dataDir = join(dir, 'data');
    const server = await startServer('pglite', { dataDir });
    try {
      const file = join(dir, 'cs.ndjson');
      writeFileSync(file, '{}\n');
      const out = run(['import', file], { ...process.env, LATTICE_DATA_DIR: dataDir, DATABASE_URL: '' });
      assert.equal(out.status, 1, out.stderr);
      assert.match(out.stderr, /is in use by process/);
      assert.match(out.stderr, /lattice import <file> --url http:\/\/localhost:8080 --client-id <id> --client-secret <secret>/);
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('an import process starts no e-mail outbox sender', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-cli-help-'));
    try {
      const file = join(dir, 'cs.ndjson');
      writeFileSync(file, JSON.stringify({ resourceType: 'CodeSystem', url: 'http://example.org/cli-mail', status: 'active', content: 'complete', concept: [{ code: 'a' }] }) + '\n');
      const { env } = await sharedStorage('pglite', dir);
      const out = run(['import', file], { ...env, LOG_LEVEL: 'info' });
      assert.equal(out.status, 0, out.stderr);
      assert.match(out.stdout, /imported 1 resources/);
      // The import logs at info (the log proves the level was on), but never starts the sender.
      assert.match(out.stdout + out.stderr, /"level":30/);
      assert.doesNotMatch(out.stdout + out.stderr, /outbox sender started/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
