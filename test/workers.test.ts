import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { projectRoot } from '../src/paths.js';
import { createTestDatabase, drivers, loginAs, type ApiResponse, type TestServer } from './harness.js';
import { latticeArgs } from './support/cli.js';
import { startServerProcess, type ServerProcess } from './support/server-process.js';

/**
 * Every core on PostgreSQL (docs/deployment.md#workers): `lattice serve` with LATTICE_WORKERS=2
 * is a primary and two worker processes on one port. A keep-alive connection stays with the
 * worker that accepted it, and `/healthz` names that worker's pid: so a test can write through
 * one worker and read through the other.
 */
const ADMIN_PASSWORD = 'admin-password-123';

/** A client whose requests all go over one keep-alive connection, i.e. to one worker. */
interface Pinned {
  pid: number;
  agent: Agent;
  request<T = unknown>(method: string, path: string, options?: { body?: unknown; token?: string | null; raw?: string; contentType?: string }): Promise<ApiResponse<T>>;
}

function pinned(baseUrl: string): Omit<Pinned, 'pid'> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const send = <T,>(method: string, path: string, options: { body?: unknown; token?: string | null; raw?: string; contentType?: string; headers?: Record<string, string> } = {}) =>
    new Promise<ApiResponse<T>>((resolve, reject) => {
      const payload = options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
      const headers: Record<string, string> = { ...(options.headers ?? {}) };
      if (payload !== undefined) headers['content-type'] = options.contentType ?? 'application/fhir+json';
      if (options.token) headers.authorization = `Bearer ${options.token}`;
      const req = request(`${baseUrl}${path}`, { method, agent, headers }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          let body: unknown;
          try {
            body = JSON.parse(text);
          } catch {
            body = undefined;
          }
          resolve({ status: res.statusCode ?? 0, body: body as T, text, headers: res.headers } as unknown as ApiResponse<T>);
        });
      });
      req.setTimeout(20_000, () => req.destroy(new Error(`${method} ${path}: no answer within 20 s`)));
      req.on('error', reject);
      req.end(payload);
    });
  return { agent, request: send };
}

/** Opens connections until one lands on a worker whose pid is not in `not`. */
async function connectionToAnotherWorker(baseUrl: string, not: number[]): Promise<Pinned> {
  for (let i = 0; i < 40; i++) {
    const client = pinned(baseUrl);
    const health = await client.request<{ pid: number }>('GET', '/healthz').catch(() => undefined);
    if (health?.status === 200 && !not.includes(health.body.pid)) return { ...client, pid: health.body.pid };
    client.agent.destroy();
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`no worker other than ${not.join(', ')} answered`);
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** `lattice serve` run to its end: exit code and what it printed. */
function serveToEnd(env: Record<string, string | undefined>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, latticeArgs('serve'), {
      cwd: projectRoot,
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', LATTICE_BASE_TERMINOLOGY: 'lazy', DATABASE_URL: undefined, ...env },
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += String(c)));
    child.stderr.on('data', (c: Buffer) => (output += String(c)));
    child.on('exit', (code) => resolve({ code, output }));
  });
}

describe('lattice serve with several workers', () => {
  test('PGlite with LATTICE_WORKERS=2 is refused at start: exit 1, the message names the setting and the fix', async () => {
    const run = await serveToEnd({ LATTICE_DATA_DIR: 'memory://', LATTICE_WORKERS: '2' });
    assert.equal(run.code, 1, run.output);
    assert.match(
      run.output,
      /LATTICE_WORKERS=2 needs PostgreSQL \(DATABASE_URL\): the embedded database \(PGlite, LATTICE_DATA_DIR\) is one data folder that one process opens\. Unset LATTICE_WORKERS or set it to 1, or set DATABASE_URL/,
    );
    assert.doesNotMatch(run.output, /Lattice listening|\n\s+at /); // no server, no stack trace
  });

  test('workers that keep dying at start (no database): the primary gives up with exit 1', async () => {
    const run = await serveToEnd({ DATABASE_URL: 'postgres://lattice:x@127.0.0.1:1/none', LATTICE_WORKERS: '2', LATTICE_DB_ACQUIRE_TIMEOUT: '1000' });
    assert.equal(run.code, 1, run.output.slice(-3000));
    assert.match(run.output, /worker died at start: restarting it/);
    assert.match(run.output, /workers keep dying at start \(4 in a row\): stopping/);
    assert.doesNotMatch(run.output, /Lattice listening/);
  });
});

if (drivers.includes('pg')) {
  describe('two workers on one port (pg)', () => {
    let server: ServerProcess;
    let a: Pinned;
    let b: Pinned;
    let token: string;

    before(async () => {
      const databaseUrl = await createTestDatabase({ migrated: true });
      server = await startServerProcess({ DATABASE_URL: databaseUrl, LATTICE_WORKERS: '2', LATTICE_ADMIN_PASSWORD: ADMIN_PASSWORD });
      a = await connectionToAnotherWorker(server.baseUrl, [server.child.pid as number]);
      b = await connectionToAnotherWorker(server.baseUrl, [server.child.pid as number, a.pid]);
      token = await loginAs(a as unknown as TestServer, 'admin@example.com', ADMIN_PASSWORD);
    });
    after(async () => {
      a?.agent.destroy();
      b?.agent.destroy();
      await server?.stop();
    });

    test('two worker processes, neither the primary, answer on the one port', async () => {
      assert.notEqual(a.pid, b.pid);
      for (const client of [a, b]) {
        const health = await client.request<{ status: string; pid: number }>('GET', '/healthz');
        assert.equal(health.status, 200);
        assert.deepEqual([health.body.status, health.body.pid], ['ok', client.pid]);
        assert.notEqual(client.pid, server.child.pid);
      }
    });

    test('a write through one worker is what the next read through the other answers (read cache)', async () => {
      const created = await a.request<{ id: string }>('POST', '/fhir/R4/Patient', { token, body: { resourceType: 'Patient', name: [{ family: 'Before' }] } });
      assert.equal(created.status, 201, created.text);
      const id = created.body.id;
      for (let round = 0; round < 5; round++) {
        const read = await b.request<{ name: Array<{ family: string }> }>('GET', `/fhir/R4/Patient/${id}`, { token }); // cached by b
        assert.equal(read.status, 200);
        const family = `Round${round}`;
        const [writer, reader] = round % 2 === 0 ? [a, b] : [b, a];
        const updated = await writer.request('PUT', `/fhir/R4/Patient/${id}`, { token, body: { resourceType: 'Patient', id, name: [{ family }] } });
        assert.equal(updated.status, 200, updated.text);
        const after = await reader.request<{ name: Array<{ family: string }> }>('GET', `/fhir/R4/Patient/${id}`, { token });
        assert.equal(after.body.name[0].family, family, `round ${round}: worker ${reader.pid} answered a row older than worker ${writer.pid}'s acknowledged write`);
      }
    });

    test('a CodeSystem changed through one worker is what the next $validate-code on the other answers (terminology index)', async () => {
      const url = 'http://example.org/workers/cs';
      const codeSystem = (codes: string[]) => ({ resourceType: 'CodeSystem', id: 'workers-cs', url, status: 'active', content: 'complete', concept: codes.map((code) => ({ code })) });
      assert.equal((await a.request('PUT', '/fhir/R4/CodeSystem/workers-cs', { token, body: codeSystem(['one']) })).status, 201);
      const validate = (client: Pinned) =>
        client.request<{ parameter: Array<{ name: string; valueBoolean?: boolean }> }>('GET', `/fhir/R4/CodeSystem/$validate-code?url=${encodeURIComponent(url)}&code=two`, { token });
      const result = async (client: Pinned) => (await validate(client)).body.parameter.find((p) => p.name === 'result')?.valueBoolean;
      assert.equal(await result(b), false); // b builds and keeps its index of the code system
      assert.equal((await a.request('PUT', '/fhir/R4/CodeSystem/workers-cs', { token, body: codeSystem(['one', 'two']) })).status, 200);
      assert.equal(await result(b), true, 'worker b answered from the index of the code system before worker a changed it');
    });

    test('kill -9 of one worker: the other keeps answering, the primary starts a replacement; SIGTERM to the primary stops every worker, exit 0', async () => {
      process.kill(a.pid, 'SIGKILL');
      const health = await b.request<{ pid: number }>('GET', '/healthz');
      assert.deepEqual([health.status, health.body.pid], [200, b.pid]);
      const search = await b.request('GET', '/fhir/R4/Patient?_count=1', { token });
      assert.equal(search.status, 200, search.text);
      const replacement = await connectionToAnotherWorker(server.baseUrl, [a.pid, b.pid, server.child.pid as number]);
      const read = await replacement.request('GET', '/fhir/R4/Patient?_count=1', { token });
      assert.equal(read.status, 200, read.text);
      replacement.agent.destroy();
      b.agent.destroy();

      await server.stop();
      assert.equal(server.child.exitCode, 0);
      assert.equal(alive(b.pid), false, 'a worker outlived the primary');
      assert.equal(alive(replacement.pid), false, 'a worker outlived the primary');
    });
  });
}
