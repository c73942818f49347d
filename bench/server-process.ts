import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

/** A process under load, started separately so the load generator does not share its CPU thread. */
export interface BenchProcess {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** A free loopback port. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * Starts the built Lattice server (`dist/lattice.js serve`) with in-memory PGlite unless
 * `env` names other storage; `ready` (default /healthz) is polled until it answers 200.
 */
export async function startLatticeProcess(env: Record<string, string> = {}, ready?: (url: string) => Promise<boolean>, pollMs = 20): Promise<BenchProcess> {
  const port = await freePort();
  // What `npm start` runs: the command's entry and the server's one-file bundle (scripts/bundle-options.mjs).
  const main = fileURLToPath(new URL('../lattice.js', import.meta.url));
  const child = spawn(process.execPath, [main, 'serve'], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      LATTICE_DATA_DIR: 'memory://',
      LOG_LEVEL: 'warn',
      LATTICE_ADMIN_EMAIL: 'admin@example.com',
      LATTICE_ADMIN_PASSWORD: 'admin-password-123',
      // One server process unless a row asks for more (rows compare like with like; docs/deployment.md#workers).
      LATTICE_WORKERS: '1',
      ...env,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  if (ready) await waitUntil(() => ready(url), child, pollMs);
  else await waitFor(`${url}/healthz`, child);
  return { url, pid: child.pid as number, stop: () => stopChild(child) };
}

/** A bare node:http server answering `body` to every request (the baseline). */
export async function startBareProcess(body: string): Promise<BenchProcess> {
  const port = await freePort();
  const code = `require('node:http').createServer((q,s)=>{s.writeHead(200,{'content-type':'application/fhir+json'});s.end(process.env.BODY)}).listen(${port},'127.0.0.1')`;
  const child = spawn(process.execPath, ['-e', code], { env: { ...process.env, BODY: body }, stdio: 'inherit' });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(url, child);
  return { url, pid: child.pid as number, stop: () => stopChild(child) };
}

/** Measures the bare server answering `body` with `measure(url)`, then stops it. */
export async function measureBare<T>(body: string, measure: (url: string) => Promise<T>): Promise<T> {
  const bare = await startBareProcess(body);
  try {
    return await measure(bare.url);
  } finally {
    await bare.stop();
  }
}

async function waitFor(url: string, child: ChildProcess): Promise<void> {
  await waitUntil(async () => (await fetch(url)).ok, child);
}

/** A wrong answer from a server that is up: `waitUntil` stops polling and fails at once. */
export class FatalError extends Error {}

/** Polls `ok` (errors count as not yet, but a FatalError fails) every `pollMs`, for up to two minutes. */
async function waitUntil(ok: () => Promise<boolean>, child: ChildProcess, pollMs = 20): Promise<void> {
  const deadline = Date.now() + 120_000;
  let last = '';
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`process exited with ${child.exitCode}`);
    try {
      if (await ok()) return;
    } catch (err) {
      if (err instanceof FatalError) {
        child.kill('SIGTERM');
        throw err;
      }
      last = err instanceof Error ? err.message : String(err); // not up yet
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
  throw new Error(`the server did not come up: ${last}`);
}

function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/**
 * The environment of a benchmark's server and imports: the super admin the token is asked for,
 * and a fixed public URL — it is the tokens' issuer; unset, it would be http://localhost:<port>
 * and a restarted server (another free port) would refuse the first server's tokens.
 */
export const BENCH_ADMIN_ENV = {
  LATTICE_ADMIN_EMAIL: 'admin@example.com',
  LATTICE_ADMIN_PASSWORD: 'admin-password-123',
  LATTICE_BASE_TERMINOLOGY: 'lazy',
  LATTICE_PUBLIC_URL: 'http://lattice.bench',
  LOG_LEVEL: 'warn',
};

/** A field of /proc/<pid>/status in bytes (`VmHWM`: peak RSS, `VmRSS`: RSS now); 0 once the process is gone. */
export function procStatus(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/**
 * `lattice import <args>` (the compiled CLI) as its own process: wall time, peak RSS (VmHWM,
 * polled every 100 ms) and its standard output; throws with the end of its output when it fails.
 */
export async function runLatticeImport(args: string[], env: NodeJS.ProcessEnv): Promise<{ seconds: number; peakRss: number; stdout: string }> {
  const started = performance.now();
  const main = fileURLToPath(new URL('../src/main.js', import.meta.url));
  const child = spawn(process.execPath, [main, 'import', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += String(c)));
  child.stderr.on('data', (c: Buffer) => (stderr = (stderr + String(c)).slice(-4000)));
  let peakRss = 0;
  const timer = setInterval(() => (peakRss = Math.max(peakRss, procStatus(child.pid as number, 'VmHWM'))), 100);
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  clearInterval(timer);
  if (code !== 0) throw new Error(`lattice import ${args.join(' ')} failed (${code}):\n${(stdout + stderr).slice(-2000)}`);
  return { seconds: (performance.now() - started) / 1000, peakRss, stdout };
}
