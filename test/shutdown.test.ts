import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { test } from 'node:test';
import { projectRoot } from '../src/paths.js';
import { latticeArgs } from './support/cli.js';

/**
 * The port the server reports in its "Lattice listening" log line (it listens on PORT=0, so no
 * other test's server can take a port picked in advance).
 */
function listeningPort(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /"msg":"Lattice listening"/.test(out) ? /"address":"http:\/\/[^:]+:(\d+)"/.exec(out) : null;
      if (m) resolve(Number(m[1]));
    });
    child.on('exit', (code) => reject(new Error(`server exited (${code}) before listening: ${out}`)));
  });
}

async function waitUp(url: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('server did not start');
}

test('SIGTERM lets an in-flight request finish, then the process exits 0', async () => {
  const child = spawn(process.execPath, latticeArgs('serve'), {
    cwd: projectRoot,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LATTICE_DATA_DIR: 'memory://', LOG_LEVEL: 'info', LATTICE_ADMIN_PASSWORD: 'admin-password-123' },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const port = await listeningPort(child);
  await waitUp(`http://127.0.0.1:${port}/healthz`);

  // A request whose body arrives in two halves, with SIGTERM in between: it must still succeed.
  // /healthz needs no token, so the check does not depend on authentication.
  const body = JSON.stringify({ padding: 'x'.repeat(1000) });
  const answer = new Promise<number>((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, method: 'POST', path: '/healthz-slow-body', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.write(body.slice(0, 500));
    setTimeout(() => {
      child.kill('SIGTERM');
      setTimeout(() => req.end(body.slice(500)), 300);
    }, 200);
  });
  // The route does not exist: a complete answer (404 OperationOutcome) proves the request was served, not cut.
  assert.equal(await answer, 404);
  assert.equal(await exited, 0);
});
