import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './server-process.js';
import { benchToken } from './token.js';

/** What `npm start` runs: the bundled server (`npm run build` makes it). */
const SERVER = fileURLToPath(new URL('../lattice.js', import.meta.url));

/** One start: milliseconds from spawning the process to each first answer. */
interface StartTimes {
  healthz: number;
  read: number;
}

/**
 * Start-up benchmark: `node dist/lattice.js serve` (what `npm start` runs) on an existing
 * database, timed from spawning the process to the first `200` of `/healthz`, and to the first
 * `200` of an authenticated FHIR read (`GET /fhir/R4/Patient/<id>`, with a token from an
 * earlier start — tokens are signed with keys kept in the database). The database is made
 * and filled by a first start that is not counted. PGlite runs in a fresh data folder;
 * PostgreSQL when `BENCH_DATABASE_URL` names an (empty, disposable) database.
 * `BENCH_STARTS` sets the number of timed starts (default 5).
 */
export async function benchStart(): Promise<string> {
  const starts = Number(process.env.BENCH_STARTS ?? 5);
  const rows: string[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'lattice-bench-start-'));
  try {
    rows.push(row('PGlite data folder', await timeStarts({ LATTICE_DATA_DIR: join(dir, 'data') }, starts)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const url = process.env.BENCH_DATABASE_URL;
  rows.push(url ? row('PostgreSQL', await timeStarts({ DATABASE_URL: url }, starts)) : '| PostgreSQL | set BENCH_DATABASE_URL | |');
  return [
    `### Start → first answer (existing database, ${starts} starts, median [min–max])`,
    '',
    '| database | → /healthz 200 | → authenticated FHIR read 200 |',
    '|---|---|---|',
    ...rows,
  ].join('\n');
}

function row(name: string, times: StartTimes[]): string {
  const cell = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    return `${sorted[sorted.length >> 1]} ms [${sorted[0]}–${sorted[sorted.length - 1]}]`;
  };
  return `| ${name} | ${cell(times.map((t) => t.healthz))} | ${cell(times.map((t) => t.read))} |`;
}

async function timeStarts(storage: Record<string, string>, starts: number): Promise<StartTimes[]> {
  const port = await freePort(); // one port for every start: the same issuer, so the token stays valid
  const env = {
    ...process.env,
    ...storage,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    LATTICE_ADMIN_EMAIL: 'admin@example.com',
    LATTICE_ADMIN_PASSWORD: 'admin-password-123',
    // The base terminologies' background load runs once per database and takes minutes; a
    // restart after it only checks that it is done, as a restart in lazy mode does nothing.
    LATTICE_BASE_TERMINOLOGY: 'lazy',
  };
  const base = `http://127.0.0.1:${port}`;
  // First start (not timed): migrations, super admin, a Patient to read, a token.
  const first = await startServer(env, base);
  let read: string;
  let token: string;
  try {
    token = await benchToken(base);
    const res = await fetch(`${base}/fhir/R4/Patient`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/fhir+json' },
      body: JSON.stringify({ resourceType: 'Patient', name: [{ family: 'Start' }] }),
    });
    if (res.status !== 201) throw new Error(`create failed: ${res.status}`);
    read = `${base}/fhir/R4/Patient/${((await res.json()) as { id: string }).id}`;
  } finally {
    await first.stop();
  }
  const times: StartTimes[] = [];
  for (let i = 0; i < starts; i++) {
    const server = await startServer(env, base);
    try {
      const res = await fetch(read, { headers: { authorization: `Bearer ${token}` } });
      if (res.status !== 200) throw new Error(`read failed: ${res.status}`);
      times.push({ healthz: server.healthz, read: Math.round(performance.now() - server.spawnedAt) });
    } finally {
      await server.stop();
    }
  }
  return times;
}

/** Spawns the server and polls `/healthz` every 5 ms until it answers 200. */
async function startServer(env: NodeJS.ProcessEnv, base: string): Promise<{ spawnedAt: number; healthz: number; stop(): Promise<void> }> {
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, [SERVER, 'serve'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
  };
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    try {
      const res = await fetch(`${base}/healthz`);
      if (res.status === 200) return { spawnedAt, healthz: Math.round(performance.now() - spawnedAt), stop };
    } catch {
      /* not listening yet */
    }
    if (performance.now() - spawnedAt > 120_000) {
      await stop();
      throw new Error('no /healthz answer within 120 s');
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
