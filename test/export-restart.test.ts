import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, test } from 'node:test';
import { createTestDatabase, drivers, pkcePair, type Driver } from './harness.js';
import { call, exportedIds, kickOff, manifestOf } from './support/bulk-export.js';
import { startServerProcess, type ServerProcess } from './support/server-process.js';

/**
 * A server killed with SIGKILL in the middle of an export (issue 36, docs/export.md#how-a-job-runs):
 * after a restart the job is taken over once its lease has run out and resumes after its last
 * stored page, so the export is complete — every resource once, none missing.
 */
const ADMIN = { email: 'admin@example.com', password: 'admin-password-123' };
const RESOURCES = 1500;

async function adminToken(baseUrl: string): Promise<string> {
  const pkce = pkcePair();
  const login = await call(baseUrl, 'POST', '/auth/login', {
    body: { ...ADMIN, codeChallenge: pkce.challenge, codeChallengeMethod: 'S256' },
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(login.status, 200, login.text);
  const res = await fetch(`${baseUrl}/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code: login.body.code as string, code_verifier: pkce.verifier }).toString(),
  });
  assert.equal(res.status, 200);
  return ((await res.json()) as { access_token: string }).access_token;
}

async function storage(driver: Driver): Promise<{ env: Record<string, string>; cleanup(): void }> {
  if (driver === 'pg') return { env: { DATABASE_URL: await createTestDatabase() }, cleanup: () => undefined };
  const dir = mkdtempSync(join(tmpdir(), 'lattice-export-'));
  return { env: { LATTICE_DATA_DIR: join(dir, 'data') }, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

for (const driver of drivers) {
  describe(`$export across a kill -9 (${driver})`, () => {
    test('the job resumes after the restart and the export holds every resource exactly once', async () => {
      const data = await storage(driver);
      const env = {
        ...data.env,
        LATTICE_ADMIN_EMAIL: ADMIN.email,
        LATTICE_ADMIN_PASSWORD: ADMIN.password,
        // Small pages (many of them to be in the middle of), a short lease (a quick takeover).
        LATTICE_EXPORT_PAGE: '1',
        LATTICE_EXPORT_LEASE_MS: '1500',
      };
      let server: ServerProcess | undefined;
      try {
        server = await startServerProcess(env);
        const token = await adminToken(server.baseUrl);
        const created: string[] = [];
        for (let batch = 0; batch < RESOURCES / 500; batch++) {
          const entry = Array.from({ length: 500 }, (_, i) => ({
            resource: { resourceType: 'Observation', status: 'final', code: { text: `o${batch * 500 + i}` } },
            request: { method: 'POST', url: 'Observation' },
          }));
          const res = await call(server.baseUrl, 'POST', '/fhir/R4', { token, body: { resourceType: 'Bundle', type: 'transaction', entry } });
          assert.equal(res.status, 200, res.text);
          for (const e of res.body.entry as Array<{ response: { location: string } }>) created.push(/Observation\/([^/]+)/.exec(e.response.location)?.[1] ?? '');
        }

        const statusUrl = await kickOff(server.baseUrl, token, '/$export?_type=Observation');
        const statusPath = new URL(statusUrl).pathname;
        // Kill it once some pages are stored and the job is still running.
        for (;;) {
          const res = await call(server.baseUrl, 'GET', statusPath, { token });
          assert.equal(res.status, 202, `the export finished before the kill: ${res.status} ${res.text}`);
          const done = Number(/^(\d+) resources exported/.exec(res.headers.get('x-progress') ?? '')?.[1] ?? 0);
          if (done > 0) break;
          await sleep(5);
        }
        await server.kill9();

        server = await startServerProcess(env);
        const manifest = await manifestOf(`${server.baseUrl}${statusPath}`, token);
        assert.deepEqual(manifest.error, []);
        // The process was started on PORT=0: its links name port 0; ask this process.
        for (const file of manifest.output) file.url = server.baseUrl + new URL(file.url).pathname;
        const exported = await exportedIds(manifest, token);
        assert.equal(exported.Observation.length, RESOURCES);
        assert.deepEqual(exported.Observation, created.sort(), 'every resource exactly once');
      } finally {
        await server?.kill9();
        data.cleanup();
      }
    });
  });
}
