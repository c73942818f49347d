import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { load, table, type LoadResult } from './http-load.js';
import { loadList, type ListRequest } from './load-list.js';
import { RELEASE_SIZE, termAncestors, termCode, writeLoincLike, type LoincLikeSize } from './loinc-like.js';
import { benchPostgres, type BenchPostgres } from './postgres.js';
import { runLatticeImport, measureBare, startLatticeProcess } from './server-process.js';

const ADMIN_PASSWORD = 'bench-password-123';
const UNITS = ['mg/dL', 'mmol/L', 'kg', '10*3/uL', 'mL/min/{1.73_m2}', 'ug/L', '%', 'g/dL', 'U/L', 'mm[Hg]'];
const LOINC = 'http://loinc.org';
const UCUM = 'http://unitsofmeasure.org';
/** Answers of each case checked against the release's layout before it is loaded. */
const SAMPLES = 100;

/**
 * `npm run bench -- loinc`: a made-up LOINC release of a real release's size (bench/loinc-like.ts,
 * BENCH_LOINC_TERMS scales it) is imported with `lattice import --format loinc` into a fresh
 * PGlite data folder and into a private PostgreSQL (bench/postgres.ts; BENCH_LOINC_PG=0 skips
 * it); reports each import's wall time and the peak resident memory of the process (goal:
 * ≤ 90 s, ≤ 1.5 GiB; docs/terminology.md#loinc). Then, on each driver, a server on that data
 * answers `$lookup`, `$validate-code` and `$subsumes` of random LOINC terms and of UCUM units
 * under load (BENCH_SECONDS each, 32 connections), as a ratio to a bare node:http server in the
 * same run (issue 39 item 5: ≥ 50%, p99 ≤ 10 ms), each case's answers checked first.
 */
export async function benchLoinc(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-bench-loinc-'));
  let postgres: BenchPostgres | undefined;
  try {
    const terms = Number(process.env.BENCH_LOINC_TERMS ?? RELEASE_SIZE.terms);
    const scale = terms / RELEASE_SIZE.terms;
    const size: LoincLikeSize = { ...RELEASE_SIZE, terms, parts: Math.round(RELEASE_SIZE.parts * scale), answerLists: Math.round(RELEASE_SIZE.answerLists * scale) };
    const seconds = Number(process.env.BENCH_SECONDS ?? 10);
    const started = Date.now();
    const release = writeLoincLike(dir, size, '2.99');
    const generated = (Date.now() - started) / 1000;
    const base = { LOG_LEVEL: 'warn', LATTICE_ADMIN_PASSWORD: ADMIN_PASSWORD };
    const drivers: Array<[string, Record<string, string>]> = [['PGlite', { LATTICE_DATA_DIR: join(dir, 'data') }]];
    if (process.env.BENCH_LOINC_PG !== '0') {
      postgres = await benchPostgres().catch((err: unknown) => {
        console.error(`PostgreSQL not measured: ${err instanceof Error ? err.message : String(err)}`);
        return undefined;
      });
      if (postgres) drivers.push(['PostgreSQL', { DATABASE_URL: postgres.url }]);
    }
    const out: string[] = [];
    const imports: string[] = [];
    for (const [driver, env] of drivers) {
      const imported = await runLatticeImport(['--format', 'loinc', release], { ...process.env, ...base, ...env });
      const concepts = /ValueSets, (\d+) concepts/.exec(imported.stdout)?.[1] ?? '?';
      imports.push(`| ${driver} | ${Number(concepts).toLocaleString('en')} | ${imported.seconds.toFixed(1)} s | ${(imported.peakRss / 2 ** 30).toFixed(2)} GiB |`);
      const load1 = loadavg()[0].toFixed(1);
      const underLoad = await loadCases({ ...base, ...env }, size, seconds);
      out.push('', `### LOINC and UCUM under load (${driver}, 32 connections, ${seconds} s per case; load average ${load1} before, ${loadavg()[0].toFixed(1)} after)`, '', underLoad);
    }
    return [
      `### LOINC import`,
      '',
      `Release: ${size.terms.toLocaleString('en')} terms, ${size.parts.toLocaleString('en')} parts, ${(size.terms * 6).toLocaleString('en')} part links, ${(size.terms * size.languages).toLocaleString('en')} variant rows (generated in ${generated.toFixed(0)} s).`,
      '',
      `| driver | codes | import | peak RSS |`,
      `|---|---|---|---|`,
      ...imports,
      ...out,
    ].join('\n');
  } finally {
    await postgres?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A case: a request path made anew for each request, and the answer it must give (checked on a sample). */
interface Case {
  name: string;
  next: () => { path: string; expect?: (body: Record<string, unknown>) => boolean };
}

/**
 * `$subsumes` pairs of LOINC codes: half a term and one of its ancestors in the component
 * hierarchy (either way round: `subsumes` / `subsumed-by`), half two random terms (terms are
 * the hierarchy's leaves: `not-subsumed`, or `equivalent` for the same term).
 */
function loincPair(size: LoincLikeSize, random: () => number): { path: string; expect: (body: Record<string, unknown>) => boolean } {
  const t = Math.floor(random() * size.terms);
  let a: string;
  let b: string;
  let outcome: string;
  if (random() < 0.5) {
    const ancestor = termAncestors(size, t)[Math.floor(random() * 3)];
    [a, b, outcome] = random() < 0.5 ? [ancestor, termCode(t), 'subsumes'] : [termCode(t), ancestor, 'subsumed-by'];
  } else {
    const u = Math.floor(random() * size.terms);
    [a, b, outcome] = [termCode(t), termCode(u), t === u ? 'equivalent' : 'not-subsumed'];
  }
  return { path: `/fhir/R4/CodeSystem/$subsumes?system=${LOINC}&codeA=${a}&codeB=${b}`, expect: (body) => param(body, 'outcome') === outcome };
}

/** `$lookup`, `$validate-code` and `$subsumes` of LOINC terms and UCUM units against the imported data, then the bare server. */
async function loadCases(env: Record<string, string>, size: LoincLikeSize, seconds: number): Promise<string> {
  const rows: Array<[string, LoadResult]> = [];
  const started = performance.now();
  const server = await startLatticeProcess({ ...env, LATTICE_BASE_TERMINOLOGY: 'lazy' });
  const firsts: string[] = [`server ready ${((performance.now() - started) / 1000).toFixed(1)} s after its start`];
  try {
    const login = await fetch(`${server.url}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'admin@example.com', password: ADMIN_PASSWORD }) });
    const { code } = (await login.json()) as { code: string };
    const tokenRes = await fetch(`${server.url}/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'authorization_code', code }) });
    const headers = { authorization: `Bearer ${((await tokenRes.json()) as { access_token: string }).access_token}` };
    let n = 0;
    const random = Math.random;
    const t = () => Math.floor(random() * size.terms);
    const unit = () => UNITS[n++ % UNITS.length];
    const cases: Case[] = [
      { name: 'LOINC `$lookup` of random terms', next: () => ((i) => ({ path: `/fhir/R4/CodeSystem/$lookup?system=${LOINC}&code=${termCode(i)}`, expect: (b) => param(b, 'code') === termCode(i) }))(t()) },
      { name: 'LOINC `$validate-code` of random terms', next: () => ({ path: `/fhir/R4/CodeSystem/$validate-code?url=${LOINC}&code=${termCode(t())}`, expect: (b) => param(b, 'result') === true }) },
      { name: 'LOINC `$subsumes` of random pairs (half a term and an ancestor, half two terms)', next: () => loincPair(size, random) },
      { name: 'UCUM `$lookup` (10 units)', next: () => ((u) => ({ path: `/fhir/R4/CodeSystem/$lookup?system=${UCUM}&code=${encodeURIComponent(u)}`, expect: (b) => param(b, 'display') === u }))(unit()) },
      { name: 'UCUM `$validate-code` (10 units)', next: () => ({ path: `/fhir/R4/CodeSystem/$validate-code?url=${UCUM}&code=${encodeURIComponent(unit())}`, expect: (b) => param(b, 'result') === true }) },
      {
        // UCUM has no hierarchy (docs/terminology.md#code-systems-built-in): a unit is equivalent to itself and subsumes no other.
        name: 'UCUM `$subsumes` (no hierarchy: `equivalent` or `not-subsumed`)',
        next: () => ((a, b) => ({ path: `/fhir/R4/CodeSystem/$subsumes?system=${UCUM}&codeA=${encodeURIComponent(a)}&codeB=${encodeURIComponent(b)}`, expect: (x) => param(x, 'outcome') === (a === b ? 'equivalent' : 'not-subsumed') }))(unit(), UNITS[Math.floor(random() * UNITS.length)]),
      },
    ];
    // The same LOINC questions from a list of 500 asked again and again (the answer cache keeps
    // them, docs/terminology.md#answer-cache), beside the random ones above (almost all new).
    for (const c of cases.slice(0, 3)) {
      const list = Array.from({ length: 500 }, () => c.next());
      let k = 0;
      cases.push({ name: `${c.name}, 500 questions asked again`, next: () => list[k++ % list.length] });
    }
    // Restart → first answer: the first `$lookup` of this fresh server, then the first
    // expansion, which waits for the release's index (read from the snapshot the import wrote;
    // point reads answer from SQL meanwhile). Then each case's answers are checked and it runs
    // briefly, outside the measure.
    for (const [label, path] of [
      ['`$lookup`', cases[0].next().path],
      ['`$expand` (reads the index)', '/fhir/R4/ValueSet/$expand?url=http://loinc.org/vs&count=1'],
    ]) {
      const t0 = performance.now();
      const res = await fetch(server.url + path, { headers });
      if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
      firsts.push(`first ${label} ${((performance.now() - t0) / 1000).toFixed(2)} s`);
    }
    for (const c of cases) {
      for (let k = 0; k < SAMPLES; k++) {
        const { path, expect } = c.next();
        const res = await fetch(server.url + path, { headers });
        const body = (await res.json()) as Record<string, unknown>;
        if (!res.ok || (expect && !expect(body))) throw new Error(`wrong answer for ${c.name} ${path}: ${res.status} ${JSON.stringify(body).slice(0, 400)}`);
      }
      await load(server.url, { seconds: 1, connections: 8, headers, body: () => ({ path: c.next().path, body: '' }) });
    }
    // The baseline, and the same server answering a LOINC lookup's body: what the bytes alone cost.
    const lookupBody = await (await fetch(server.url + cases[0].next().path, { headers })).text();
    // Every row through the same generator: a worker thread's autocannon over a list made first
    // (bench/load-list.ts) — in this thread it shared the heap of the release's model, and its
    // collections, not the server, set some rows (docs/benchmarks.md).
    const underLoad = async (url: string, requests: ListRequest[]): Promise<LoadResult> => {
      const r = await loadList(url, requests, { seconds, connections: 32 });
      return { requestsPerSecond: r.rps, p50: r.p50, p99: r.p99, errors: r.errors, non2xx: r.non2xx };
    };
    for (const [name, body] of [
      ['bare node:http server', JSON.stringify({ resourceType: 'Parameters', parameter: [{ name: 'result', valueBoolean: true }] })],
      [`bare node:http server, a LOINC lookup's body (${(lookupBody.length / 1024).toFixed(1)} KB)`, lookupBody],
    ]) {
      rows.push([name, await measureBare(body, (url) => underLoad(url, [{ method: 'GET', path: '/' }]))]);
    }
    // More questions than a case sends at these rates: the random cases' stay (almost) all new.
    const listed = (c: Case): ListRequest[] => Array.from({ length: c.name.includes('asked again') || c.name.startsWith('UCUM') ? 500 : 150_000 }, () => ({ method: 'GET', path: c.next().path, headers }));
    for (const c of cases) rows.push([`${c.name} (${SAMPLES} answers checked)`, await underLoad(server.url, listed(c))]);
  } finally {
    await server.stop();
  }
  return `Restart → first answer: ${firsts.join(', ')}.\n\n${table(rows)}`;
}

/** The value of a Parameters parameter (its first value[x]). */
function param(body: Record<string, unknown>, name: string): unknown {
  const p = (body.parameter as Array<Record<string, unknown>> | undefined)?.find((x) => x.name === name);
  if (!p) return undefined;
  const key = Object.keys(p).find((k) => k.startsWith('value'));
  return key ? p[key] : undefined;
}
