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
// BENCH_PG=1: the server on a private PostgreSQL (bench/postgres.ts) instead; PostgreSQL's CPU
// (its postmaster and backends, found by the port in the postmaster's command line) is then
// reported beside the server's.
// Usage: node bench/cpu-per-search.mjs [checkout dir, default .] [port] [patients, default 312 ≈ 20,000 resources] [requests per round, default 1000]
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
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
// BENCH_SHAPE=<encounters>,<observations>: per patient and per encounter (default 10,5: 50 Observations a patient).
const [encounters, observations] = (process.env.BENCH_SHAPE ?? '10,5').split(',').map(Number);
const SHAPE = { patients, encounters, observations };

const dataDir = process.env.BENCH_DATA_DIR;
const prepared = dataDir !== undefined && existsSync(dataDir);
const served = prepared ? mkdtempSync(join(tmpdir(), 'lattice-cpu-search-')) : dataDir;
if (prepared) cpSync(dataDir, served, { recursive: true });
const postgres = process.env.BENCH_PG === '1' ? await (await import(resolve(here, '../dist/bench/postgres.js'))).benchPostgres() : undefined;
const env = { LATTICE_BASE_TERMINOLOGY: 'lazy', ...(served ? { LATTICE_DATA_DIR: served } : {}), ...(postgres ? { DATABASE_URL: postgres.url, LATTICE_WORKERS: '1' } : {}) };
/** PostgreSQL's CPU so far (ms): its postmaster's own and reaped children's, and its live children's. */
const postgresMs = () => {
  if (!postgres) return 0;
  const port = new URL(postgres.url).port;
  const stats = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .flatMap((pid) => {
      try {
        return [{ pid, cmd: readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' '), stat: readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ') }];
      } catch {
        return [];
      }
    });
  const master = stats.find((p) => p.cmd.includes(`-p ${port}`) && p.cmd.startsWith('/'));
  if (!master) return 0;
  const ticks = (f, withChildren) => Number(f[11]) + Number(f[12]) + (withChildren ? Number(f[13]) + Number(f[14]) : 0);
  return 10 * stats.filter((p) => p.stat[1] === master.pid).reduce((sum, p) => sum + ticks(p.stat, false), ticks(master.stat, true));
};
/** The CPU time of thread `tid` of process `pid` so far, ms. */
const threadMs = (pid, tid) => {
  const fields = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

await withMeasuredServer({ dir, port, env, startTries: 300 }, async ({ base, headers: auth, rounds, pid }) => {
  const headers = { ...auth, 'content-type': 'application/fhir+json' };
  if (!prepared) await load(base, headers);
  if (postgres) {
    // What autovacuum would do in a while, now: statistics and the visibility map of the load.
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: postgres.url });
    await client.connect();
    await client.query('VACUUM ANALYZE');
    await client.end();
  }
  const searches = [
    '/fhir/R4/Patient?family=Smith&_count=10',
    '/fhir/R4/Observation?subject=Patient/syn-p2&code=http://loinc.org|8302-2',
    '/fhir/R4/Observation?subject=Patient/syn-p2&_count=10',
    '/fhir/R4/Encounter?date=ge2015-01-01&_count=10',
  ];
  // The first search runs ANALYZE (PGlite has no autovacuum; src/storage/search/statistics.ts).
  for (const path of searches) await fetch(base + path, { headers });
  const only = process.env.BENCH_ONLY;
  const cases = [['GET Patient/<id>', '/fhir/R4/Patient/syn-p1'], ...searches.flatMap((path) => [[`GET ${path.slice(9)}`, path], [`  … &_total=none`, `${path}&_total=none`]])];
  for (const [name, path] of cases) {
    if (only && !path.includes(only)) continue;
    const [main, database] = [threadMs(pid, pid), postgresMs()];
    // BENCH_DISTINCT=1: every request a search not asked before (`family=Smith,Zz<n>`: the same
    // matches, one more value that matches nothing), so none is answered from the search answer
    // cache (docs/rest.md#search-answer-cache); only the searches by family vary.
    let n = 0;
    const distinct = process.env.BENCH_DISTINCT === '1' && path.includes('family=Smith') ? { setupRequest: (req) => ({ ...req, path: path.replace('family=Smith', `family=Smith,Zz${n++}`) }) } : {};
    const figures = await rounds({ connections: 8, amount, headers, requests: [{ method: 'GET', path, ...distinct }] }, name);
    const per = (ms) => Math.round((ms * 1000) / (3 * amount));
    const pgMicros = postgres ? `, PostgreSQL: ${per(postgresMs() - database)} a request` : '';
    console.log(`server CPU per ${name}, µs, three rounds: ${figures.join(', ')} (main thread: ${per(threadMs(pid, pid) - main)} a request${pgMicros})`);
  }
});
if (prepared) rmSync(served, { recursive: true, force: true });
await postgres?.stop();

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
