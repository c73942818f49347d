import { spawn, type ChildProcess } from 'node:child_process';
import { projectRoot } from '../../src/paths.js';
import { latticeArgs } from './cli.js';

/** A Lattice server in a process of its own (`src/main.ts serve`), which a test may kill -9. */
export interface ServerProcess {
  child: ChildProcess;
  baseUrl: string;
  /** kill -9, resolved once the process is gone. */
  kill9(): Promise<void>;
  /** SIGTERM, resolved once the process is gone. */
  stop(): Promise<void>;
}

/** Starts `serve` with `env` (PORT=0: the port is read from the "Lattice listening" log line). */
export async function startServerProcess(env: Record<string, string>): Promise<ServerProcess> {
  const child = spawn(process.execPath, latticeArgs('serve'), {
    cwd: projectRoot,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LATTICE_BASE_TERMINOLOGY: 'lazy', LATTICE_PASSWORD_COST: '10', LATTICE_WORKERS: '1', ...env, LOG_LEVEL: 'info' }, // one process unless `env` asks for workers; info: the "Lattice listening" line carries the port
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let out = '';
  const port = await new Promise<number>((resolve, reject) => {
    const seen = (d: Buffer) => {
      out += d.toString();
      const m = /"msg":"Lattice listening"/.test(out) ? /"address":"http:\/\/[^:]+:(\d+)"/.exec(out) : null;
      if (m) resolve(Number(m[1]));
    };
    child.stdout?.on('data', seen);
    child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) => reject(new Error(`server exited (${code}) before listening: ${out.slice(-2000)}`)));
    setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not listen within 300 s: ${out.slice(-2000)}`));
    }, 300_000).unref();
  });
  // Keep draining the pipes so the server never blocks on a full one.
  child.stdout?.resume();
  child.stderr?.resume();
  const end = async (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  return { child, baseUrl: `http://127.0.0.1:${port}`, kill9: () => end('SIGKILL'), stop: () => end('SIGTERM') };
}
