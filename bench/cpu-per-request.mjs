#!/usr/bin/env node
// Server CPU per warm `$lookup`, for an A/B of two builds on one machine: starts the built server
// of a checkout (`<dir>/dist/lattice.js`, run `npm run build` there first) on an in-memory PGlite
// database, stores a 5,000-concept CodeSystem, warms it, then sends 3 rounds of 30,000 lookups
// (16 connections) and reads the server process's CPU time from /proc (Linux). The load
// generator's own CPU does not count, so the number is steadier than a throughput ratio on a
// 2-core machine. Usage: node bench/cpu-per-request.mjs [checkout dir, default .] [port]
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import autocannon from 'autocannon';

const dir = resolve(process.argv[2] ?? '.');
const port = Number(process.argv[3] ?? 18100);
const base = `http://127.0.0.1:${port}`;
const env = { ...process.env, PORT: String(port), LATTICE_DATA_DIR: 'memory://', LATTICE_ADMIN_PASSWORD: 'admin-password-123', LATTICE_PASSWORD_COST: '10', LOG_LEVEL: 'warn' };
const server = spawn(process.execPath, [`${dir}/dist/lattice.js`, 'serve'], { env, stdio: ['ignore', 'ignore', 'inherit'] });

try {
  for (let i = 0; i < 150; i++) {
    const up = await fetch(`${base}/healthz`).then((r) => r.ok, () => false);
    if (up) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const login = await post('/auth/login', 'application/json', JSON.stringify({ email: 'admin@example.com', password: 'admin-password-123', codeChallenge: challenge, codeChallengeMethod: 'S256' }));
  const tokens = await post('/oauth2/token', 'application/x-www-form-urlencoded', `grant_type=authorization_code&code=${login.code}&code_verifier=${verifier}`);
  const headers = { authorization: `Bearer ${tokens.access_token}` };
  const concept = Array.from({ length: 5000 }, (_, i) => ({
    code: `c${i}`,
    display: `Concept ${i}`,
    designation: [{ language: 'de', value: `Begriff ${i}` }],
    ...(i > 0 ? { property: [{ code: 'parent', valueCode: `c${Math.floor((i - 1) / 3)}` }] } : {}),
  }));
  const body = { resourceType: 'CodeSystem', id: 'cpu', url: 'http://example.org/cpu', status: 'active', content: 'complete', property: [{ code: 'parent', type: 'code' }], concept };
  const put = await fetch(`${base}/fhir/R4/CodeSystem/cpu`, { method: 'PUT', headers: { ...headers, 'content-type': 'application/fhir+json' }, body: JSON.stringify(body) });
  if (put.status > 201) throw new Error(`storing the code system: ${put.status} ${await put.text()}`);
  const path = (i) => `/fhir/R4/CodeSystem/$lookup?system=http://example.org/cpu&code=c${i % 5000}`;
  for (let i = 0; i < 300; i++) await fetch(base + path(i), { headers }); // the index is built and warm
  const cpuMs = () => {
    const fields = readFileSync(`/proc/${server.pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10; // utime + stime, in clock ticks of 10 ms
  };
  const rounds = [];
  for (let round = 0; round < 3; round++) {
    const before = cpuMs();
    let n = 0;
    const result = await autocannon({ url: base, connections: 16, amount: 30_000, headers, requests: [{ setupRequest: (req) => ({ ...req, path: path((n++ * 7) % 5000) }) }] });
    if (result.non2xx > 0) throw new Error(`${result.non2xx} answers were not 2xx`);
    rounds.push(Math.round(((cpuMs() - before) * 1000) / result.requests.total));
  }
  console.log(`${dir}: server CPU per $lookup, µs, three rounds: ${rounds.join(', ')}`);
} finally {
  server.kill('SIGTERM');
}

async function post(p, contentType, text) {
  const res = await fetch(base + p, { method: 'POST', headers: { 'content-type': contentType }, body: text });
  if (!res.ok) throw new Error(`${p}: ${res.status} ${await res.text()}`);
  return res.json();
}
