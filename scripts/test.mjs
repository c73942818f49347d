#!/usr/bin/env node
// `npm test`: type-check, lint, then the whole suite (unit + end-to-end over real HTTP) on
// PGlite and — when PostgreSQL 15 server binaries are installed — on a private PostgreSQL
// server started here in a temp folder and stopped at the end. TEST_DATABASE_URL skips the
// private server and uses the given one. LATTICE_TEST_DRIVERS=pglite limits the drivers.
// Extra arguments are test files (default: every *.test.ts under src/ and test/).
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, chmodSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const args = process.argv.slice(2);
const quick = args.includes('--quick'); // skip type-check and lint while iterating
const files = args.filter((a) => !a.startsWith('--'));

function run(cmd, cmdArgs, opts = {}) {
  const res = spawnSync(cmd, cmdArgs, { stdio: 'inherit', cwd: root, ...opts });
  if (res.status !== 0) process.exit(res.status ?? 1);
}

if (!quick) {
  console.log('# type-check');
  run('npx', ['tsc', '-p', '.', '--noEmit']);
  console.log('# lint');
  run('npx', ['eslint', '.']);
}

function findTests(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...findTests(p));
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}
const testFiles = files.length ? files : [...findTests(join(root, 'src')), ...findTests(join(root, 'test'))].sort();

const env = { ...process.env };
let stopPostgres = () => {};
const wantedDrivers = (env.LATTICE_TEST_DRIVERS ?? 'pglite,pg').split(',');
if (wantedDrivers.includes('pg') && !env.TEST_DATABASE_URL) {
  const started = await startPrivatePostgres();
  if (started) {
    env.TEST_DATABASE_URL = started.url;
    stopPostgres = started.stop;
  } else {
    console.log('# PostgreSQL server binaries not found: running on PGlite only');
  }
}
env.LATTICE_TEST_DRIVERS = wantedDrivers.filter((d) => d !== 'pg' || env.TEST_DATABASE_URL).join(',');
let templateDir;
if (env.LATTICE_TEST_DRIVERS.split(',').includes('pglite') && !env.LATTICE_TEST_PGLITE_TEMPLATE) {
  // One migrated PGlite data folder for the whole run: each test server loads it instead of
  // running initdb (several times faster on a small machine).
  templateDir = mkdtempSync(join(tmpdir(), 'lattice-pglite-'));
  env.LATTICE_TEST_PGLITE_TEMPLATE = join(templateDir, 'template.tar');
  run(process.execPath, ['--import', 'tsx', 'test/support/make-pglite-template.ts', env.LATTICE_TEST_PGLITE_TEMPLATE]);
}
console.log(`# drivers: ${env.LATTICE_TEST_DRIVERS}`);

const concurrency = env.TEST_CONCURRENCY ?? '2';
const child = spawn(
  process.execPath,
  ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-timeout=600000', ...testFiles],
  { stdio: 'inherit', cwd: root, env },
);
const cleanup = () => {
  stopPostgres();
  if (templateDir) rmSync(templateDir, { recursive: true, force: true });
};
process.on('SIGINT', () => child.kill('SIGINT'));
process.on('SIGTERM', () => child.kill('SIGTERM'));
child.on('exit', (code, signal) => {
  cleanup();
  process.exit(code ?? (signal ? 1 : 0));
});

/** initdb + pg_ctl in a temp folder (as the `postgres` user when running as root). */
async function startPrivatePostgres() {
  let bindir;
  try {
    bindir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
  } catch {
    bindir = '/usr/lib/postgresql/15/bin';
  }
  if (!existsSync(join(bindir, 'initdb'))) return undefined;
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'lattice-pg-'));
  chmodSync(dir, 0o777);
  const dataDir = join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  const pgRun = (bin, binArgs) => {
    const cmd = asRoot ? 'runuser' : join(bindir, bin);
    const fullArgs = asRoot ? ['-u', 'postgres', '--', join(bindir, bin), ...binArgs] : binArgs;
    const res = spawnSync(cmd, fullArgs, { encoding: 'utf8' });
    if (res.status !== 0) throw new Error(`${bin} failed: ${res.stderr || res.stdout}`);
  };
  pgRun('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  pgRun('pg_ctl', [
    '-D', dataDir, '-l', join(dir, 'postgres.log'), '-w', 'start',
    '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300`,
  ]);
  console.log(`# private PostgreSQL on port ${port} (${dataDir})`);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop: () => {
      try {
        pgRun('pg_ctl', ['-D', dataDir, '-m', 'immediate', '-w', 'stop']);
      } catch (err) {
        console.error(String(err));
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}
