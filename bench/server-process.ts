import { spawn, type ChildProcess } from 'node:child_process';
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
 * Starts the compiled Lattice server (`dist/src/main.js serve`) with in-memory PGlite unless
 * `env` names other storage; `ready` (default /healthz) is polled until it answers 200.
 */
export async function startLatticeProcess(env: Record<string, string> = {}, ready?: (url: string) => Promise<boolean>): Promise<BenchProcess> {
  const port = await freePort();
  const main = fileURLToPath(new URL('../src/main.js', import.meta.url));
  const child = spawn(process.execPath, [main, 'serve'], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      LATTICE_DATA_DIR: 'memory://',
      LOG_LEVEL: 'warn',
      LATTICE_ADMIN_EMAIL: 'admin@example.com',
      LATTICE_ADMIN_PASSWORD: 'admin-password-123',
      ...env,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  if (ready) await waitUntil(() => ready(url), child);
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

async function waitFor(url: string, child: ChildProcess): Promise<void> {
  await waitUntil(async () => (await fetch(url)).ok, child);
}

/** A wrong answer from a server that is up: `waitUntil` stops polling and fails at once. */
export class FatalError extends Error {}

/** Polls `ok` (errors count as not yet, but a FatalError fails) every 20 ms, for up to two minutes. */
async function waitUntil(ok: () => Promise<boolean>, child: ChildProcess): Promise<void> {
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
    await new Promise((r) => setTimeout(r, 20));
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
