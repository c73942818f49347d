#!/usr/bin/env node
// Server CPU per create, per changed update, per read and per search of a Patient, for an A/B of
// two builds on one machine (docs/rest.md#cost-of-a-request): starts the built server of a
// checkout (`<dir>/dist/lattice.js`, run `npm run build` there first) on an in-memory PGlite
// database — so the database's CPU is the server process's — and reads that process's CPU time
// from /proc (Linux) around 3 rounds of each request (8 connections). The load generator's own
// CPU does not count, so the figure holds on a busy machine far better than a throughput ratio.
// Usage: node bench/cpu-per-write.mjs [checkout dir, default .] [port] [requests per round, default 3000]
import { resolve } from 'node:path';
import { withMeasuredServer } from './cpu-server.mjs';

const dir = resolve(process.argv[2] ?? '.');
const port = Number(process.argv[3] ?? 18700);
const amount = Number(process.argv[4] ?? 3000);

await withMeasuredServer({ dir, port, env: { LATTICE_BASE_TERMINOLOGY: 'lazy' }, startTries: 300 }, async ({ base, headers: auth, rounds }) => {
  const headers = { ...auth, 'content-type': 'application/fhir+json' };
  const patient = { resourceType: 'Patient', name: [{ family: 'Bench', given: ['Mark'] }], gender: 'female', birthDate: '1970-01-01', telecom: [{ system: 'email', value: 'bench@example.com' }] };
  const created = await fetch(`${base}/fhir/R4/Patient`, { method: 'POST', headers, body: JSON.stringify(patient) }).then((r) => r.json());
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
    const figures = await rounds({ connections: 8, amount, headers, requests: [request] }, name);
    console.log(`${dir}: server CPU per ${name}, µs, three rounds: ${figures.join(', ')}`);
  }
});
