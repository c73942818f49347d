#!/usr/bin/env node
// Server CPU per request of what every repeated request pays (the front door): a repeated
// `$lookup`, `$subsumes`, `$validate-code` (answered from the kept answers,
// docs/terminology.md#answer-cache) and `GET Patient/<id>` (from the read cache), on PGlite (in
// memory) and PostgreSQL (a private server, `LATTICE_WORKERS=1`), for an A/B of checkouts on one
// machine: each checkout's built server (`<dir>/dist/lattice.js`) is measured in turn, the whole
// list `BENCH_FD_REPEAT` times (default 2), alternating, then a bare node:http server.
//
//   node bench/cpu-front-door.mjs DIR [DIR …]     # BENCH_FD_DRIVERS=pglite,pg (default both)
//
// Figures: the server process's CPU µs per request from /proc (the load generator's CPU does
// not count; see bench/cpu-server.mjs), median of 3 rounds of BENCH_FD_AMOUNT (default 8,000)
// requests on 16 connections. PostgreSQL's own CPU is not counted.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve, join } from 'node:path';
import autocannon from 'autocannon';
import { withMeasuredServer } from './cpu-server.mjs';

const dirs = process.argv.slice(2).map((d) => resolve(d));
if (dirs.length === 0) dirs.push(resolve('.'));
const drivers = (process.env.BENCH_FD_DRIVERS ?? 'pglite,pg').split(',');
const repeat = Number(process.env.BENCH_FD_REPEAT ?? 2);
const amount = Number(process.env.BENCH_FD_AMOUNT ?? 8000);
const CS = 'http://example.org/cpu';
const BARE_BODY = JSON.stringify({ resourceType: 'Parameters', parameter: [{ name: 'outcome', valueCode: 'subsumes' }] });
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const concept = Array.from({ length: 5000 }, (_, i) => ({
  code: `c${i}`,
  display: `Concept ${i}`,
  designation: [{ language: 'de', value: `Begriff ${i}` }],
  ...(i > 0 ? { property: [{ code: 'parent', valueCode: `c${Math.floor((i - 1) / 3)}` }] } : {}),
}));
const codeSystem = { resourceType: 'CodeSystem', id: 'cpu', url: CS, status: 'active', content: 'complete', property: [{ code: 'parent', type: 'code' }], concept };
const codes = Array.from({ length: 400 }, (_, i) => `c${(i * 7) % 5000}`);
const allCases = [
  ['$lookup', (i) => `/fhir/R4/CodeSystem/$lookup?system=${encodeURIComponent(CS)}&code=${codes[i % codes.length]}`],
  ['$subsumes', (i) => `/fhir/R4/CodeSystem/$subsumes?system=${encodeURIComponent(CS)}&codeA=c0&codeB=${codes[i % codes.length]}`],
  ['$validate-code', (i) => `/fhir/R4/CodeSystem/$validate-code?url=${encodeURIComponent(CS)}&code=${codes[i % codes.length]}`],
  ['GET Patient/<id>', () => '/fhir/R4/Patient/fd-1'],
];
// BENCH_FD_CASES: a comma-separated subset of the case labels (e.g. `$lookup`, for a profile of one).
const only = process.env.BENCH_FD_CASES?.split(',');
const cases = only ? allCases.filter(([label]) => only.includes(label)) : allCases;

/** One checkout on one driver: { case: µs median }. */
async function measure(dir, env, port) {
  const out = {};
  await withMeasuredServer({ dir, port, startTries: 300, env }, async ({ base, headers, rounds }) => {
    const put = async (path, body) => {
      const res = await fetch(base + path, { method: 'PUT', headers: { ...headers, 'content-type': 'application/fhir+json' }, body: JSON.stringify(body) });
      if (res.status > 201) throw new Error(`PUT ${path}: ${res.status} ${await res.text()}`);
    };
    await put('/fhir/R4/CodeSystem/cpu', codeSystem);
    await put('/fhir/R4/Patient/fd-1', { resourceType: 'Patient', id: 'fd-1', name: [{ family: 'Door', given: ['Front'] }], gender: 'other', birthDate: '1970-01-01' });
    for (const [label, path] of cases) {
      for (let i = 0; i < 450; i++) {
        const res = await fetch(base + path(i), { headers });
        if (res.status !== 200) throw new Error(`${label}: ${res.status} ${await res.text()}`);
        await res.arrayBuffer();
      }
      let n = 0;
      await rounds({ connections: 16, amount: 2000, requests: [{ setupRequest: (req) => ({ ...req, path: path(n++) }) }] }, 'warm-up');
      const figures = await rounds({ connections: 16, amount, requests: [{ setupRequest: (req) => ({ ...req, path: path(n++) }) }] }, label);
      out[label] = median(figures);
    }
  });
  return out;
}

async function bareCpu(port) {
  const code = `require('node:http').createServer((q, s) => { s.writeHead(200, { 'content-type': 'application/fhir+json' }); s.end(${JSON.stringify(BARE_BODY)}); }).listen(${port})`;
  const bare = spawn(process.execPath, ['-e', code], { stdio: 'ignore' });
  try {
    await new Promise((r) => setTimeout(r, 500));
    const cpu = () => readFileSync(`/proc/${bare.pid}/stat`, 'utf8').split(') ')[1].split(' ').slice(11, 13).reduce((a, b) => a + Number(b) * 10, 0);
    const figures = [];
    for (let round = 0; round < 4; round++) {
      const before = cpu();
      const result = await autocannon({ url: `http://127.0.0.1:${port}/`, connections: 16, amount });
      if (round > 0) figures.push(Math.round(((cpu() - before) * 1000) / result.requests.total));
    }
    return median(figures);
  } finally {
    bare.kill('SIGTERM');
  }
}

const results = []; // [driver, dir, run, figures]
let port = 18300;
for (const driver of drivers) {
  let pg;
  if (driver === 'pg') {
    const { benchPostgres } = await import(join(dirs[0], 'dist/bench/postgres.js'));
    pg = await benchPostgres();
  }
  try {
    for (let run = 0; run < repeat; run++) {
      for (const dir of dirs) {
        let env = { LATTICE_DATA_DIR: 'memory://', LATTICE_BASE_TERMINOLOGY: 'lazy' };
        if (pg) {
          const pgMod = (await import('pg')).default;
          const name = `fd_${run}_${dirs.indexOf(dir)}`;
          const admin = new pgMod.Client({ connectionString: pg.url });
          await admin.connect();
          await admin.query(`CREATE DATABASE ${name}`);
          await admin.end();
          const url = new URL(pg.url);
          url.pathname = `/${name}`;
          env = { DATABASE_URL: url.toString(), LATTICE_WORKERS: '1', LATTICE_BASE_TERMINOLOGY: 'lazy' };
        }
        const figures = await measure(dir, env, port++);
        results.push([driver, dir, run, figures]);
        console.error(driver, dir, run, JSON.stringify(figures));
      }
    }
  } finally {
    await pg?.stop();
  }
}
const bare = await bareCpu(port++);
console.log(`server CPU µs per request (median of 3 rounds of ${amount}, 16 connections); bare node:http server: ${bare} µs`);
console.log(`| driver | checkout | run | ${cases.map(([l]) => l).join(' | ')} |`);
for (const [driver, dir, run, figures] of results) console.log(`| ${driver} | ${dir} | ${run + 1} | ${cases.map(([l]) => figures[l]).join(' | ')} |`);
