#!/usr/bin/env node
// Server CPU per create, per changed update, per read and per search of a Patient, for an A/B of
// two builds on one machine (docs/rest.md#cost-of-a-request): starts the built server of a
// checkout (`<dir>/dist/lattice.js`, run `npm run build` there first) on an in-memory PGlite
// database — so the database's CPU is the server process's — and reads that process's CPU time
// from /proc (Linux) around 3 rounds of each request (8 connections). The load generator's own
// CPU does not count, so the figure holds on a busy machine far better than a throughput ratio.
// Usage: node bench/cpu-per-write.mjs [checkout dir, default .] [port] [requests per round, default 3000]
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import autocannon from 'autocannon';

const dir = resolve(process.argv[2] ?? '.');
const port = Number(process.argv[3] ?? 18700);
const amount = Number(process.argv[4] ?? 3000);
const base = `http://127.0.0.1:${port}`;
const env = { ...process.env, PORT: String(port), LATTICE_DATA_DIR: 'memory://', LATTICE_ADMIN_PASSWORD: 'admin-password-123', LATTICE_PASSWORD_COST: '10', LATTICE_BASE_TERMINOLOGY: 'lazy', LOG_LEVEL: 'warn' };
const server = spawn(process.execPath, [`${dir}/dist/lattice.js`, 'serve'], { env, stdio: ['ignore', 'ignore', 'inherit'] });

try {
  for (let i = 0; i < 300; i++) {
    const up = await fetch(`${base}/healthz`).then((r) => r.ok, () => false);
    if (up) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const login = await post('/auth/login', 'application/json', JSON.stringify({ email: 'admin@example.com', password: 'admin-password-123', codeChallenge: challenge, codeChallengeMethod: 'S256' }));
  const tokens = await post('/oauth2/token', 'application/x-www-form-urlencoded', `grant_type=authorization_code&code=${login.code}&code_verifier=${verifier}`);
  const headers = { authorization: `Bearer ${tokens.access_token}`, 'content-type': 'application/fhir+json' };
  const patient = { resourceType: 'Patient', name: [{ family: 'Bench', given: ['Mark'] }], gender: 'female', birthDate: '1970-01-01', telecom: [{ system: 'email', value: 'bench@example.com' }] };
  const created = await fetch(`${base}/fhir/R4/Patient`, { method: 'POST', headers, body: JSON.stringify(patient) }).then((r) => r.json());
  const cpuMs = () => {
    const fields = readFileSync(`/proc/${server.pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10; // utime + stime, in clock ticks of 10 ms
  };
  let n = 0;
  const cases = {
    'POST Patient': { method: 'POST', path: '/fhir/R4/Patient', body: JSON.stringify(patient) },
    'PUT Patient (changed)': {
      method: 'PUT',
      path: `/fhir/R4/Patient/${created.id}`,
      setupRequest: (req) => ({ ...req, body: JSON.stringify({ ...patient, id: created.id, birthDate: `19${String(10 + (n++ % 89))}-01-01` }) }),
    },
    'GET Patient/<id>': { method: 'GET', path: `/fhir/R4/Patient/${created.id}` },
    'GET Patient?family=bench&_count=10': { method: 'GET', path: '/fhir/R4/Patient?family=bench&_count=10' },
  };
  for (const [name, request] of Object.entries(cases)) {
    const rounds = [];
    for (let round = 0; round < 3; round++) {
      const before = cpuMs();
      const result = await autocannon({ url: base, connections: 8, amount, headers, requests: [request] });
      if (result.non2xx > 0) throw new Error(`${name}: ${result.non2xx} answers were not 2xx`);
      rounds.push(Math.round(((cpuMs() - before) * 1000) / result.requests.total));
    }
    console.log(`${dir}: server CPU per ${name}, µs, three rounds: ${rounds.join(', ')}`);
  }
} finally {
  server.kill('SIGTERM');
}

async function post(p, contentType, text) {
  const res = await fetch(base + p, { method: 'POST', headers: { 'content-type': contentType }, body: text });
  if (!res.ok) throw new Error(`${p}: ${res.status} ${await res.text()}`);
  return res.json();
}
