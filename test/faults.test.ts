import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, test } from 'node:test';
import { createTestDatabase, drivers, pkcePair, type Driver } from './harness.js';
import { startServerProcess, type ServerProcess } from './support/server-process.js';

/**
 * Fault tests on real server processes (issue 13): `kill -9` in the middle of a stream of
 * writes loses no acknowledged write and leaves no half-done invite, on both drivers. The
 * PostgreSQL outage tests live in test/faults-postgres.test.ts.
 */
const ADMIN = { email: 'admin@example.com', password: 'admin-password-123' };

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON off the wire
type Json = any;

async function call(baseUrl: string, method: string, path: string, body?: unknown, token?: string, contentType = 'application/fhir+json'): Promise<{ status: number; body: Json; text: string }> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  let raw: string | undefined;
  if (body !== undefined) {
    headers['content-type'] = contentType;
    raw = typeof body === 'string' ? body : JSON.stringify(body);
  }
  const res = await fetch(baseUrl + path, { method, headers, body: raw });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, body: parsed, text };
}

/** The super admin's access token, through the HTTP login flow. */
async function adminToken(baseUrl: string): Promise<string> {
  const pkce = pkcePair();
  const login = await call(baseUrl, 'POST', '/auth/login', { ...ADMIN, codeChallenge: pkce.challenge, codeChallengeMethod: 'S256' }, undefined, 'application/json');
  assert.equal(login.status, 200, login.text);
  const form = new URLSearchParams({ grant_type: 'authorization_code', code: login.body.code, code_verifier: pkce.verifier }).toString();
  const tokens = await call(baseUrl, 'POST', '/oauth2/token', form, undefined, 'application/x-www-form-urlencoded');
  assert.equal(tokens.status, 200, tokens.text);
  return tokens.body.access_token as string;
}

/** Where a killed server's data lives, so the next process finds it again. */
async function storage(driver: Driver): Promise<{ env: Record<string, string>; cleanup(): void }> {
  if (driver === 'pg') return { env: { DATABASE_URL: await createTestDatabase() }, cleanup: () => undefined };
  const dir = mkdtempSync(join(tmpdir(), 'lattice-fault-'));
  return { env: { LATTICE_DATA_DIR: join(dir, 'data') }, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

function serverEnv(data: { env: Record<string, string> }): Record<string, string> {
  return { ...data.env, LATTICE_ADMIN_EMAIL: ADMIN.email, LATTICE_ADMIN_PASSWORD: ADMIN.password };
}

/**
 * Runs `streams` loops of `step` until the server dies; `step` returns true when the server
 * acknowledged its write. Resolves when every loop has stopped (its request failed).
 */
async function untilKilled(streams: number, step: (stream: number, n: number) => Promise<void>): Promise<void> {
  await Promise.all(
    Array.from({ length: streams }, async (_, stream) => {
      for (let n = 1; ; n++) {
        try {
          await step(stream, n);
        } catch {
          return; // the connection died with the server
        }
      }
    }),
  );
}

for (const driver of drivers) {
  describe(`kill -9 (${driver})`, () => {
    test('during a stream of updates: every acknowledged version is there after the restart', async () => {
      const data = await storage(driver);
      let server: ServerProcess | undefined;
      try {
        server = await startServerProcess(serverEnv(data));
        const token = await adminToken(server.baseUrl);
        const ids: string[] = [];
        for (let i = 0; i < 3; i++) {
          const res = await call(server.baseUrl, 'POST', '/fhir/R4/Patient', { resourceType: 'Patient', name: [{ family: 'v1' }] }, token);
          assert.equal(res.status, 201, res.text);
          ids.push(res.body.id);
        }
        const acked: Array<{ id: string; version: string; family: string }> = [];
        const running = server;
        const streams = untilKilled(3, async (stream, n) => {
          const id = ids[stream];
          const family = `s${stream}-n${n}`;
          const res = await call(running.baseUrl, 'PUT', `/fhir/R4/Patient/${id}`, { resourceType: 'Patient', id, name: [{ family }] }, token);
          assert.equal(res.status, 200, res.text);
          acked.push({ id, version: res.body.meta.versionId, family });
        });
        while (acked.length < 30) await sleep(20);
        await server.kill9();
        await streams;
        server = await startServerProcess(serverEnv(data));
        const after = await adminToken(server.baseUrl);
        for (const { id, version, family } of acked) {
          const res = await call(server.baseUrl, 'GET', `/fhir/R4/Patient/${id}/_history/${version}`, undefined, after);
          assert.equal(res.status, 200, `acknowledged ${id} v${version} lost: ${res.text}`);
          assert.equal(res.body.name[0].family, family);
        }
        for (const id of ids) {
          const last = Math.max(...acked.filter((a) => a.id === id).map((a) => Number(a.version)));
          const current = await call(server.baseUrl, 'GET', `/fhir/R4/Patient/${id}`, undefined, after);
          assert.ok(Number(current.body.meta.versionId) >= last, `current ${current.body.meta.versionId} older than acknowledged ${last}`);
        }
      } finally {
        await server?.kill9();
        data.cleanup();
      }
    });

    test('during a stream of transactions: each Bundle is there whole or not at all', async () => {
      const data = await storage(driver);
      let server: ServerProcess | undefined;
      const SIZE = 5;
      try {
        server = await startServerProcess(serverEnv(data));
        const token = await adminToken(server.baseUrl);
        const acked = new Set<string>();
        const attempted: string[] = [];
        const running = server;
        const streams = untilKilled(3, async (stream, n) => {
          const key = `${stream}-${n}`;
          attempted.push(key);
          const entry = Array.from({ length: SIZE }, (_, i) => ({
            fullUrl: `urn:uuid:00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
            resource: { resourceType: 'Patient', identifier: [{ system: 'urn:fault:tx', value: key }], name: [{ family: `t${i}` }] },
            request: { method: 'POST', url: 'Patient' },
          }));
          const res = await call(running.baseUrl, 'POST', '/fhir/R4', { resourceType: 'Bundle', type: 'transaction', entry }, token);
          assert.equal(res.status, 200, res.text);
          acked.add(key);
        });
        while (acked.size < 10) await sleep(20);
        await server.kill9();
        await streams;
        server = await startServerProcess(serverEnv(data));
        const after = await adminToken(server.baseUrl);
        for (const key of attempted) {
          const res = await call(server.baseUrl, 'GET', `/fhir/R4/Patient?identifier=${encodeURIComponent(`urn:fault:tx|${key}`)}&_count=50`, undefined, after);
          assert.equal(res.status, 200, res.text);
          const found = (res.body.entry ?? []).length;
          if (acked.has(key)) assert.equal(found, SIZE, `acknowledged transaction ${key} has ${found} of ${SIZE} entries`);
          else assert.ok(found === 0 || found === SIZE, `transaction ${key} half-written: ${found} of ${SIZE} entries`);
        }
      } finally {
        await server?.kill9();
        data.cleanup();
      }
    });

    test('during invites: each invited person has user, profile and membership, or none of them', async () => {
      const data = await storage(driver);
      let server: ServerProcess | undefined;
      try {
        server = await startServerProcess(serverEnv(data));
        const token = await adminToken(server.baseUrl);
        const project = await call(server.baseUrl, 'POST', '/fhir/R4/Project', { resourceType: 'Project', name: 'Faults' }, token);
        assert.equal(project.status, 201, project.text);
        const projectId = project.body.id as string;
        const tried: string[] = [];
        const acked = new Set<string>();
        const running = server;
        const streams = untilKilled(4, async (stream, n) => {
          const email = `kill-${stream}-${n}-${randomBytes(3).toString('hex')}@example.org`;
          tried.push(email);
          const body = { resourceType: 'Practitioner', firstName: 'Kill', lastName: `Nine${n}`, email, sendEmail: true };
          const res = await call(running.baseUrl, 'POST', `/admin/projects/${projectId}/invite`, body, token, 'application/json');
          assert.equal(res.status, 200, res.text);
          acked.add(email);
        });
        while (acked.size < 8) await sleep(10);
        await server.kill9();
        await streams;
        server = await startServerProcess(serverEnv(data));
        const after = await adminToken(server.baseUrl);
        const search = async (path: string): Promise<Json[]> => {
          const res = await call(server!.baseUrl, 'GET', `/fhir/R4/${path}`, undefined, after);
          assert.equal(res.status, 200, res.text);
          return (res.body.entry ?? []).map((e: Json) => e.resource);
        };
        let complete = 0;
        for (const email of tried) {
          const users = await search(`User?email=${encodeURIComponent(email)}`);
          const profiles = await search(`Practitioner?email=${encodeURIComponent(email)}`);
          const memberships = users.length ? await search(`ProjectMembership?user=User/${users[0].id}`) : [];
          const counts = [users.length, profiles.length, memberships.length];
          assert.ok(
            counts.every((c) => c === 0) || counts.every((c) => c === 1),
            `${email}: users/profiles/memberships = ${counts.join('/')} (all or nothing)`,
          );
          if (acked.has(email)) assert.deepEqual(counts, [1, 1, 1], `${email} was acknowledged`);
          if (counts[0] === 1) {
            complete++;
            assert.equal(memberships[0].profile.reference, `Practitioner/${profiles[0].id}`);
          }
        }
        assert.ok(complete >= acked.size);
      } finally {
        await server?.kill9();
        data.cleanup();
      }
    });
  });
}
