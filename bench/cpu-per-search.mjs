#!/usr/bin/env node
// Server CPU per search of the README's bench (docs/rest.md#cost-of-a-request), for an A/B of two
// builds on one machine: starts the built server of a checkout (`<dir>/dist/lattice.js`, run
// `npm run build` there first) on an in-memory PGlite database — so the database's CPU is the
// server process's —, loads a generated Synthea-shaped population (bench/synthea-like.ts of THIS
// checkout's dist, by transaction Bundles), and reads the process's CPU time from /proc around 3
// rounds of each search (8 connections), each also with `_total=none` (the difference is the
// COUNT's share). BENCH_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof' profiles the server.
// BENCH_DATA_DIR=<folder>: the population is loaded into that PGlite folder when it does not exist
// yet, else a copy of it is served (not loaded again; the server's migrations run on the copy).
// Besides the process's CPU, the main thread's (HTTP, JSON, SQL building; the rest is PGlite's).
// Usage: node bench/cpu-per-search.mjs [checkout dir, default .] [port] [patients, default 312 ≈ 20,000 resources] [requests per round, default 1000]
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { withMeasuredServer } from './cpu-server.mjs';

const dir = resolve(process.argv[2] ?? '.');
const port = Number(process.argv[3] ?? 18720);
const patients = Number(process.argv[4] ?? 312);
const amount = Number(process.argv[5] ?? 1000);
const here = dirname(fileURLToPath(import.meta.url));
const { patientResources } = await import(resolve(here, '../dist/bench/synthea-like.js'));
const SHAPE = { patients, encounters: 10, observations: 5 };

const dataDir = process.env.BENCH_DATA_DIR;
const prepared = dataDir !== undefined && existsSync(dataDir);
const served = prepared ? mkdtempSync(join(tmpdir(), 'lattice-cpu-search-')) : dataDir;
if (prepared) cpSync(dataDir, served, { recursive: true });
const env = { LATTICE_BASE_TERMINOLOGY: 'lazy', ...(served ? { LATTICE_DATA_DIR: served } : {}) };
/** The CPU time of thread `tid` of process `pid` so far, ms. */
const threadMs = (pid, tid) => {
  const fields = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

await withMeasuredServer({ dir, port, env, startTries: 300 }, async ({ base, headers: auth, rounds, pid }) => {
  const headers = { ...auth, 'content-type': 'application/fhir+json' };
  if (!prepared) await load(base, headers);
  const searches = [
    '/fhir/R4/Patient?family=Smith&_count=10',
    '/fhir/R4/Observation?subject=Patient/syn-p2&code=http://loinc.org|8302-2',
    '/fhir/R4/Encounter?date=ge2015-01-01&_count=10',
  ];
  // The first search runs ANALYZE (PGlite has no autovacuum; src/storage/search/statistics.ts).
  for (const path of searches) await fetch(base + path, { headers });
  const only = process.env.BENCH_ONLY;
  const cases = [['GET Patient/<id>', '/fhir/R4/Patient/syn-p1'], ...searches.flatMap((path) => [[`GET ${path.slice(9)}`, path], [`  … &_total=none`, `${path}&_total=none`]])];
  for (const [name, path] of cases) {
    if (only && !path.includes(only)) continue;
    const main = threadMs(pid, pid);
    const figures = await rounds({ connections: 8, amount, headers, requests: [{ method: 'GET', path }] }, name);
    const mainMicros = Math.round(((threadMs(pid, pid) - main) * 1000) / (3 * amount));
    console.log(`server CPU per ${name}, µs, three rounds: ${figures.join(', ')} (main thread: ${mainMicros} a request)`);
  }
});
if (prepared) rmSync(served, { recursive: true, force: true });

/** Loads the population by transaction Bundles of 500 PUTs. */
async function load(base, headers) {
  let entry = [];
  const send = async () => {
    const res = await fetch(`${base}/fhir/R4`, { method: 'POST', headers, body: JSON.stringify({ resourceType: 'Bundle', type: 'transaction', entry }) });
    if (!res.ok) throw new Error(`load: ${res.status} ${(await res.text()).slice(0, 300)}`);
    entry = [];
  };
  let loaded = 0;
  for (let p = 0; p < patients; p++) {
    for (const resource of patientResources(p, SHAPE)) {
      entry.push({ resource, request: { method: 'PUT', url: `${resource.resourceType}/${resource.id}` } });
      loaded++;
      if (entry.length === 500) await send();
    }
  }
  if (entry.length > 0) await send();
  console.log(`${dir}: loaded ${loaded} resources of ${patients} patients`);
}
