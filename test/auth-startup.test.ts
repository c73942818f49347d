import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, mock, test } from 'node:test';
import type { BundleEntry, Project } from '@medplum/fhirtypes';
import { createProject, createTestDatabase, drivers, loginAs, loginTokens, startServer, tokenRequest } from './harness.js';

/** First start (super admin, signing key) and several API nodes on one database (docs/auth.md). */
for (const driver of drivers) {
  describe(`auth: first start (${driver})`, () => {
    test('without LATTICE_ADMIN_PASSWORD a password is generated, printed once, and works', async () => {
      const printed: string[] = [];
      const spy = mock.method(console, 'log', (...args: unknown[]) => void printed.push(args.join(' ')));
      let server;
      try {
        server = await startServer(driver, { env: { LATTICE_ADMIN_PASSWORD: '', LATTICE_ADMIN_EMAIL: 'Root@Example.org' } });
      } finally {
        spy.mock.restore();
      }
      try {
        const lines = printed.filter((l) => l.includes('root@example.org'));
        assert.equal(lines.length, 1, printed.join('\n'));
        const password = /password: (\S+)/.exec(lines[0])?.[1];
        assert.ok(password && password.length >= 8);
        const token = await loginAs(server, 'root@example.org', password);
        const projects = await server.fhir('GET', '/Project', { token });
        assert.equal(projects.status, 200, projects.text);
        const superProject = projects.body.entry.map((e: BundleEntry<Project>) => e.resource).find((p: Project) => p.superAdmin === true);
        assert.equal(superProject.name, 'Super Admin');
        assert.equal(/project: (\S+)/.exec(lines[0])?.[1], superProject.id, 'the banner names the super admin project');
      } finally {
        await server.stop();
      }
    });

    test('a restart keeps the signing key: tokens stay valid; no second super admin', async () => {
      const dir = driver === 'pglite' ? mkdtempSync(join(tmpdir(), 'lattice-auth-')) : undefined;
      const databaseUrl = driver === 'pg' ? await createTestDatabase() : undefined;
      const env = { LATTICE_PUBLIC_URL: 'http://lattice.test' };
      try {
        const first = await startServer(driver, { dataDir: dir, databaseUrl, env });
        const token = first.adminToken!;
        const refresh = (await loginTokens(first, 'admin@example.com', 'admin-password-123', { scope: 'openid offline_access' })).refresh_token!;
        await first.stop();
        const second = await startServer(driver, { dataDir: dir, databaseUrl, env });
        try {
          assert.equal((await second.fhir('GET', '/Patient', { token })).status, 200);
          assert.equal((await tokenRequest(second, { grant_type: 'refresh_token', refresh_token: refresh })).status, 200);
          const db = second.app.db;
          assert.equal((await db.query<{ n: number }>('SELECT count(*)::int AS n FROM auth_signing_key')).rows[0].n, 1);
          const supers = await db.query("SELECT id FROM resource WHERE resource_type = 'Project' AND content LIKE '%\"superAdmin\":true%'");
          assert.equal(supers.rows.length, 1);
        } finally {
          await second.stop();
        }
      } finally {
        if (dir) rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}

if (drivers.includes('pg')) {
  describe('auth: two API nodes on one PostgreSQL (pg)', () => {
    test('two processes starting together create one super admin and one key, and accept each other’s tokens', async () => {
      const databaseUrl = await createTestDatabase();
      // Same public URL (issuer) on both nodes, as behind one load balancer.
      const env = { LATTICE_PUBLIC_URL: 'http://lattice.test' };
      const [a, b] = await Promise.all([startServer('pg', { databaseUrl, env }), startServer('pg', { databaseUrl, env })]);
      try {
        const db = a.app.db;
        assert.equal((await db.query<{ n: number }>('SELECT count(*)::int AS n FROM auth_signing_key')).rows[0].n, 1);
        // (Each test server also makes its own default project and member: not counted here.)
        const count = async (sql: string) => (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM resource r WHERE ${sql}`)).rows[0].n;
        assert.equal(await count(`r.resource_type = 'Project' AND r.content::jsonb->>'superAdmin' = 'true'`), 1);
        assert.equal(await count(`r.resource_type = 'User' AND r.content::jsonb->>'email' = 'admin@example.com'`), 1);
        assert.equal(
          await count(`r.resource_type = 'ProjectMembership' AND r.content::jsonb->'project'->>'reference' IN
                       (SELECT 'Project/' || p.id FROM resource p WHERE p.resource_type = 'Project' AND p.content::jsonb->>'superAdmin' = 'true')`),
          1,
        );

        // A token issued by one node works on the other, in both directions.
        assert.equal((await b.fhir('GET', '/Patient', { token: a.adminToken })).status, 200);
        assert.equal((await a.fhir('GET', '/Patient', { token: b.adminToken })).status, 200);
        const p = await createProject(a, 'Cross-node');
        const created = await b.fhir('POST', '/Patient', { token: p.adminToken, body: { resourceType: 'Patient' } });
        assert.equal(created.status, 201, created.text);
        assert.equal(created.body.meta.project, p.projectId);

        // A refresh token issued on one node rotates on the other; reuse is seen by both.
        const tokens = await loginTokens(a, 'admin@example.com', 'admin-password-123', { scope: 'openid offline_access' });
        assert.equal((await tokenRequest(b, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! })).status, 200);
        assert.equal((await tokenRequest(a, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! })).body.error, 'invalid_grant');

        // Login throttling counts failures on every node together.
        const login = (server: typeof a, password: string) =>
          server.request('POST', '/auth/login', { body: { email: p.adminEmail, password }, contentType: 'application/json', token: null });
        for (let i = 0; i < 10; i++) assert.equal((await login(i % 2 ? a : b, 'wrong-password')).status, 400);
        assert.equal((await login(a, p.adminPassword)).status, 429);
        assert.equal((await login(b, p.adminPassword)).status, 429);
      } finally {
        await Promise.all([a.stop(), b.stop()]);
      }
    });
  });
}
