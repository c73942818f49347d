#!/usr/bin/env node
// Where a `POST Patient`'s CPU goes, for an A/B of two builds on one machine: starts the built
// server of a checkout (`<dir>/dist/lattice.js`, run `npm run build` there first) and runs 3
// rounds of creates (32 connections unless BENCH_CONNECTIONS), reading CPU time from /proc
// around each — the load generator's own CPU does not count.
// - `pglite` (default): an in-memory database; per round the whole process's µs per create,
//   then per thread (the HTTP thread is the process id; the database thread is the busiest other).
// - `pg`: a private PostgreSQL (bench/postgres.ts, or DATABASE_URL); the server's processes (its
//   workers included) and PostgreSQL's processes (the postmaster's children), µs per create each.
// Usage: node bench/cpu-per-create.mjs [checkout dir, default .] [pglite|pg] [port] [creates per round, default 3000]
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import autocannon from 'autocannon';
import { withMeasuredServer } from './cpu-server.mjs';
import { benchPostgres } from '../dist/bench/postgres.js';

const dir = resolve(process.argv[2] ?? '.');
const driver = process.argv[3] ?? 'pglite';
const port = Number(process.argv[4] ?? 18730);
const amount = Number(process.argv[5] ?? 3000);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);

/** utime + stime of /proc/<path>/stat, in ms (clock ticks of 10 ms), and the parent pid. */
function stat(path) {
  try {
    const fields = readFileSync(`/proc/${path}/stat`, 'utf8').split(') ')[1].split(' ');
    return { ms: (Number(fields[11]) + Number(fields[12])) * 10, parent: Number(fields[1]) };
  } catch {
    return { ms: 0, parent: 0 };
  }
}
const processes = () => readdirSync('/proc').filter((p) => /^\d+$/.test(p));
/** CPU ms of `root` and every process under it. */
function treeMs(root, all = processes()) {
  let ms = stat(root).ms;
  for (const p of all) if (stat(p).parent === root) ms += treeMs(Number(p), all);
  return ms;
}
const threadsMs = (pid) => Object.fromEntries(readdirSync(`/proc/${pid}/task`).map((t) => [t, stat(`${pid}/task/${t}`).ms]));

const db = driver === 'pg' ? await benchPostgres() : undefined;
const postmaster = db?.dataDir ? Number(readFileSync(`${db.dataDir}/postmaster.pid`, 'utf8').split('\n')[0]) : undefined;
try {
  const env = { LATTICE_BASE_TERMINOLOGY: 'lazy', ...(db ? { DATABASE_URL: db.url } : {}) };
  await withMeasuredServer({ dir, port, env, startTries: 300 }, async ({ base, headers: auth, pid, idle }) => {
    const headers = { ...auth, 'content-type': 'application/fhir+json' };
    const patient = { resourceType: 'Patient', name: [{ family: 'Bench', given: ['Mark'] }], gender: 'female', birthDate: '1970-01-01', telecom: [{ system: 'email', value: 'bench@example.com' }] };
    const requests = [{ method: 'POST', path: '/fhir/R4/Patient', body: JSON.stringify(patient) }];
    await autocannon({ url: base, headers, connections, amount: 500, requests }); // warm-up
    if (!db) await idle();
    for (let round = 0; round < 3; round++) {
      const server0 = treeMs(pid);
      const threads0 = threadsMs(pid);
      const database0 = postmaster ? treeMs(postmaster) : 0;
      const result = await autocannon({ url: base, headers, connections, amount, requests });
      if (result.non2xx > 0) throw new Error(`${result.non2xx} answers were not 2xx`);
      const per = (ms) => Math.round((ms * 1000) / result.requests.total);
      const load = `${Math.round(result.requests.average)} req/s, p99 ${result.latency.p99} ms`;
      if (db) {
        console.log(`${dir} (pg): server ${per(treeMs(pid) - server0)} µs + PostgreSQL ${postmaster ? `${per(treeMs(postmaster) - database0)} µs` : 'not measured (DATABASE_URL)'} per create (${load})`);
        continue;
      }
      const threads = Object.entries(threadsMs(pid)).map(([t, ms]) => [t, ms - (threads0[t] ?? 0)]);
      const http = threads.find(([t]) => Number(t) === pid)?.[1] ?? 0;
      const others = threads.filter(([t]) => Number(t) !== pid).sort((a, b) => b[1] - a[1]);
      const database = others[0]?.[1] ?? 0;
      const rest = others.slice(1).reduce((sum, [, ms]) => sum + ms, 0);
      console.log(`${dir} (pglite): ${per(http + database + rest)} µs per create = HTTP thread ${per(http)} + database thread ${per(database)} + other threads ${per(rest)} (${load})`);
    }
  });
} finally {
  await db?.stop();
}
