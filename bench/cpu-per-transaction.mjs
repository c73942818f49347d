#!/usr/bin/env node
// Server CPU per resource of Synthea-shaped transaction Bundles (bench/writes.ts's, with conditional
// references to shared Organizations and Practitioners), for an A/B of two builds on one machine:
// starts the built server of a checkout (`<dir>/dist/lattice.js`) on an in-memory PGlite database
// (its thread's CPU is the server process's) and reads that process's CPU time from /proc around
// each Bundle (in all, on the main thread and on the database's thread), one Bundle at a time. The Bundles come from this checkout's dist/bench/writes.js
// (run `npm run build` in both). CPU time, unlike throughput, holds on a busy machine.
// Usage: node bench/cpu-per-transaction.mjs [checkout dir, default .] [port] [sizes, default 100,1000] [Bundles per size, default 4]
// BENCH_DATA_DIR=<folder> puts the database in a data folder instead of memory.
// With LATTICE_CPU_PROF=<folder> the server runs under `node --cpu-prof` and writes its profiles there.
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { withMeasuredServer } from './cpu-server.mjs';
import { sharedResources, transactionBundle } from '../dist/bench/writes.js';

const dir = resolve(process.argv[2] ?? '.');
const port = Number(process.argv[3] ?? 18710);
const sizes = (process.argv[4] ?? '100,1000').split(',').map(Number);
const perSize = Number(process.argv[5] ?? 4);
const profile = process.env.LATTICE_CPU_PROF;

const env = { LATTICE_BASE_TERMINOLOGY: 'lazy', LATTICE_DB_STATEMENT_TIMEOUT: '0', ...(process.env.BENCH_DATA_DIR ? { LATTICE_DATA_DIR: process.env.BENCH_DATA_DIR } : {}) };
const nodeArgs = profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : [];
/**
 * CPU ms of each thread of the process, by thread id: the main thread (the process id), V8's
 * helpers, libuv's, the embedded database's.
 */
function threads(pid) {
  const out = new Map();
  const tids = readdirSync(`/proc/${pid}/task`).map(Number).sort((a, b) => a - b);
  for (const tid of tids) {
    try {
      const fields = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1].split(' ');
      out.set(tid, (Number(fields[11]) + Number(fields[12])) * 10);
    } catch {
      // ended meanwhile
    }
  }
  return out;
}

await withMeasuredServer({ dir, port, env, startTries: 300, nodeArgs }, async ({ base, headers: auth, cpuMs, pid }) => {
  const headers = { ...auth, 'content-type': 'application/fhir+json' };
  const post = async (bundle) => {
    const res = await fetch(`${base}/fhir/R4`, { method: 'POST', headers, body: JSON.stringify(bundle) });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`transaction: ${res.status} ${text.slice(0, 300)}`);
  };
  await post(sharedResources());
  let next = 0;
  await post(transactionBundle(100, () => next++).bundle); // warm: definitions, terminology
  for (const size of sizes) {
    const figures = [];
    const total = { cpu: cpuMs(), threads: threads(pid), started: performance.now() };
    for (let i = 0; i < perSize; i++) {
      const { bundle } = transactionBundle(size, () => next++);
      const before = cpuMs();
      const threadsBefore = threads(pid);
      const started = performance.now();
      await post(bundle);
      const took = Math.round(performance.now() - started);
      const used = threads(pid);
      const per = (tid) => Math.round((((used.get(tid) ?? 0) - (threadsBefore.get(tid) ?? 0)) * 1000) / size);
      // The database's thread: the busiest one besides the main thread.
      const database = [...used.keys()].filter((tid) => tid !== pid).sort((a, b) => per(b) - per(a))[0];
      figures.push(`${Math.round(((cpuMs() - before) * 1000) / size)} µs = main ${per(pid)} + database ${per(database)} + other (${took} ms)`);
    }
    console.log(`${dir}: server CPU per resource of ${size}-entry transactions (wall time per Bundle): ${figures.join(', ')}`);
    const used = threads(pid);
    const n = size * perSize;
    const main = Math.round((((used.get(pid) ?? 0) - (total.threads.get(pid) ?? 0)) * 1000) / n);
    const wall = Math.round((n * 1000) / (performance.now() - total.started));
    console.log(`${dir}: ${size}-entry transactions in all: ${Math.round(((cpuMs() - total.cpu) * 1000) / n)} µs CPU per resource (main thread ${main}), ${wall} resources/s`);
  }
});
