#!/usr/bin/env node
// Server CPU per request of what every repeated request pays (the front door): a repeated
// `$lookup`, `$subsumes`, `$validate-code` (answered from the kept answers,
// docs/terminology.md#answer-cache) and `GET Patient/<id>` (from the read cache), on PGlite (in
// memory) and PostgreSQL (a private server, `LATTICE_WORKERS=1`), for an A/B of checkouts on one
// machine: every checkout's built server (`<dir>/dist/lattice.js`) runs at once and the rounds
// alternate between them and a bare node:http server, so each sees the same load.
//
//   node bench/cpu-front-door.mjs DIR [DIR …]     # BENCH_FD_DRIVERS=pglite,pg (default both)
//
// Figures: the server process's CPU µs per request from /proc (the load generator's CPU does
// not count; see bench/cpu-server.mjs), median and minimum of BENCH_FD_ROUNDS rounds (default 7)
// of BENCH_FD_AMOUNT (default 8,000) requests on 16 connections. PostgreSQL's own CPU is not counted.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve, join } from 'node:path';
import autocannon from 'autocannon';
import { withMeasuredServer } from './cpu-server.mjs';

const dirs = process.argv.slice(2).map((d) => resolve(d));
if (dirs.length === 0) dirs.push(resolve('.'));
const drivers = (process.env.BENCH_FD_DRIVERS ?? 'pglite,pg').split(',');
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

/** Stores the data and warms every case on one started server. */
async function prepare({ base, headers }) {
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
  }
}

/** Starts every server (nested: each stays up until all are measured). */
async function withServers(specs, use, started = []) {
  if (specs.length === 0) return use(started);
  const [spec, ...rest] = specs;
  return withMeasuredServer(spec, async (server) => {
    await prepare(server);
    return withServers(rest, use, [...started, server]);
  });
}

/** A bare node:http server's CPU per request, with and without the Lattice requests' headers: the ratio's denominator. */
function bareServer(port) {
  const code = `require('node:http').createServer((q, s) => { s.writeHead(200, { 'content-type': 'application/fhir+json' }); s.end(${JSON.stringify(BARE_BODY)}); }).listen(${port})`;
  const proc = spawn(process.execPath, ['-e', code], { stdio: 'ignore' });
  const cpu = () => readFileSync(`/proc/${proc.pid}/stat`, 'utf8').split(') ')[1].split(' ').slice(11, 13).reduce((a, b) => a + Number(b) * 10, 0);
  return {
    ready: new Promise((r) => setTimeout(r, 500)),
    async round(headers) {
      const before = cpu();
      const result = await autocannon({ url: `http://127.0.0.1:${port}/`, connections: 16, amount, headers });
      return Math.round(((cpu() - before) * 1000) / result.requests.total);
    },
    stop: () => proc.kill('SIGTERM'),
  };
}

// Every checkout's server is up at once and the rounds alternate between them (and the bare
// server), so that each sees the same load on a shared machine: medians and minimums of
// BENCH_FD_ROUNDS rounds (default 7) per case.
const ROUNDS = Number(process.env.BENCH_FD_ROUNDS ?? 7);
const lines = [];
let port = Number(process.env.BENCH_FD_PORT ?? 18300);
for (const driver of drivers) {
  let pg;
  if (driver === 'pg') {
    const { benchPostgres } = await import(join(dirs[0], 'dist/bench/postgres.js'));
    pg = await benchPostgres();
  }
  const bare = bareServer(port++);
  try {
    const specs = [];
    for (const [index, dir] of dirs.entries()) {
      let env = { LATTICE_DATA_DIR: 'memory://', LATTICE_BASE_TERMINOLOGY: 'lazy' };
      if (pg) {
        const pgMod = (await import('pg')).default;
        const name = `fd_${index}`;
        const admin = new pgMod.Client({ connectionString: pg.url });
        await admin.connect();
        await admin.query(`CREATE DATABASE ${name}`);
        await admin.end();
        const url = new URL(pg.url);
        url.pathname = `/${name}`;
        env = { DATABASE_URL: url.toString(), LATTICE_WORKERS: '1', LATTICE_BASE_TERMINOLOGY: 'lazy' };
      }
      specs.push({ dir, port: port++, startTries: 300, env });
    }
    await bare.ready;
    await withServers(specs, async (servers) => {
      const figures = servers.map(() => ({}));
      const bareFigures = { plain: [], headers: [] };
      for (const [label, path] of cases) {
        let n = 0;
        for (const server of servers) await server.rounds({ connections: 16, amount: 2000, requests: [{ setupRequest: (req) => ({ ...req, path: path(n++) }) }] }, 'warm-up');
        for (let round = 0; round < ROUNDS; round++) {
          for (const [i, server] of servers.entries()) {
            const [µs] = await server.rounds({ connections: 16, amount, requests: [{ setupRequest: (req) => ({ ...req, path: path(n++) }) }] }, label, 1);
            (figures[i][label] ??= []).push(µs);
          }
          if (label === cases[0][0]) {
            bareFigures.plain.push(await bare.round(undefined));
            bareFigures.headers.push(await bare.round(servers[0].headers));
          }
        }
      }
      const summary = (xs) => `${median(xs)} (min ${Math.min(...xs)})`;
      lines.push(`${driver}: bare node:http server ${summary(bareFigures.plain)} µs; with the same Authorization header ${summary(bareFigures.headers)} µs`);
      lines.push(`| driver | checkout | ${cases.map(([l]) => l).join(' | ')} |`);
      for (const i of servers.keys()) lines.push(`| ${driver} | ${specs[i].dir} | ${cases.map(([l]) => summary(figures[i][l])).join(' | ')} |`);
      console.error(lines.slice(-2 - servers.length).join('\n'));
    });
  } finally {
    bare.stop();
    await pg?.stop();
  }
}
console.log(`server CPU µs per request: median (min) of ${ROUNDS} rounds of ${amount} requests, 16 connections, checkouts alternating round by round`);
console.log(lines.join('\n'));
