import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadList, type ListLoad } from './load-list.js';
import { benchPostgres } from './postgres.js';
import { BENCH_ADMIN_ENV, FatalError, procStatus, runLatticeImport, measureBare, startLatticeProcess, type BenchProcess } from './server-process.js';
import { descendants, generateSnomedLike, isAncestorOrSelf, prng, SNOMED_LIKE_URL, VALUE_SET_BASE, writeNdjson, type SnomedLike } from './snomed-like.js';
import { benchToken } from './token.js';

/**
 * The terminology-at-scale benchmark (README "Benchmarks", issue 12's table): generates the
 * SNOMED-like system (bench/snomed-like.ts), imports it with `lattice import` as its own process
 * (wall time, peak RSS), measures the database size, restarts the server and times start → first
 * `$lookup`, then loads each operation with 32 connections after checking a sample of answers
 * against the generator's model — on PGlite and on PostgreSQL, each beside a bare node:http
 * server measured in the same run.
 */

export interface ScaleOptions {
  size: number;
  seconds: number;
  connections: number;
  drivers: Array<'pglite' | 'pg'>;
  /** Answers checked per operation before it is loaded. */
  samples: number;
}

type Load = ListLoad;

interface DriverResult {
  driver: 'pglite' | 'pg';
  importSeconds: number;
  importPeakRss: number;
  dbBytes: number;
  firstLookupSeconds: number;
  /** Start → the point operations answered from memory (see `warmUp`), or undefined when they never were. */
  warmSeconds: number | undefined;
  serverRss: number;
  baseline: Load;
  ops: Array<{ name: string; load: Load; checked: number }>;
}


export async function benchScale(options: ScaleOptions): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-bench-scale-'));
  try {
    let started = performance.now();
    const model = generateSnomedLike(options.size);
    const file = join(dir, 'snomed-like.ndjson');
    await writeNdjson(model, file);
    const generated = `generated ${options.size.toLocaleString('en')} concepts (${countMulti(model)}% with 2–3 parents, depth ${model.level.reduce((a, b) => Math.max(a, b), 0)}, is-a value set of ${model.focusMembers.toLocaleString('en')} members), ${(statSync(file).size / 1e6).toFixed(0)} MB NDJSON, in ${((performance.now() - started) / 1000).toFixed(1)} s`;
    console.error(generated);
    const results: DriverResult[] = [];
    for (const driver of options.drivers) {
      started = performance.now();
      results.push(await benchDriver(driver, model, file, dir, options));
      console.error(`${driver} done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
    }
    return report(results, options, generated);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function benchDriver(driver: 'pglite' | 'pg', model: SnomedLike, file: string, dir: string, options: ScaleOptions): Promise<DriverResult> {
  const postgres = driver === 'pg' ? await benchPostgres() : undefined;
  const dataDir = join(dir, `data-${driver}`);
  const storage: Record<string, string> = postgres ? { DATABASE_URL: postgres.url } : { LATTICE_DATA_DIR: dataDir };
  try {
    // The server creates the schema and the super admin, then the CLI imports on its own.
    let server = await startLatticeProcess({ ...BENCH_ADMIN_ENV, ...storage });
    const token = await benchToken(server.url);
    await server.stop();
    console.error(`${driver}: importing …`);
    const imported = await runLatticeImport([file], { ...process.env, ...BENCH_ADMIN_ENV, ...storage });
    const dbBytes = postgres ? await postgres.size() : folderSize(dataDir);

    const auth = { authorization: `Bearer ${token}` };
    const lookupPath = (i: number) => `/fhir/R4/CodeSystem/$lookup?system=${encodeURIComponent(SNOMED_LIKE_URL)}&code=${model.codes[i]}`;
    const t0 = performance.now();
    server = await startLatticeProcess({ ...BENCH_ADMIN_ENV, ...storage }, async (url) => {
      const res = await fetch(url + lookupPath(1), { headers: auth });
      if (res.status !== 200 && res.status !== 503) throw new FatalError(`first $lookup: ${res.status} ${(await res.text()).slice(0, 300)}`);
      return res.status === 200;
    });
    const firstLookupSeconds = (performance.now() - t0) / 1000;
    // The first `$lookup` is answered from SQL while the index loads in the background; the load
    // cases measure the steady state, so they wait for it (and the table says how long it took).
    const warm = await warmUp(server.url, Array.from({ length: 50 }, (_, i) => ({ method: 'GET' as const, path: lookupPath(i + 1), headers: auth })));
    const warmSeconds = warm === undefined ? undefined : (performance.now() - t0) / 1000;
    console.error(`${driver}: first $lookup after ${firstLookupSeconds.toFixed(1)} s, index warm after ${warmSeconds?.toFixed(1) ?? 'never'} s`);
    try {
      const ops = await loadOperations(server, model, auth, options);
      const serverRss = procStatus(server.pid, 'VmRSS');
      const baseline = await measureBare(JSON.stringify(lookupLike(model)), (url) => loadList(url, [{ method: 'GET', path: '/' }], options));
      return { driver, importSeconds: imported.seconds, importPeakRss: imported.peakRss, dbBytes, firstLookupSeconds, warmSeconds, serverRss, baseline, ops };
    } finally {
      await server.stop();
    }
  } finally {
    await postgres?.stop();
  }
}

type Req = { method: 'GET' | 'POST'; path: string; body?: string; headers?: Record<string, string> };

/** The four operations: answers checked on a sample first, then loaded. */
async function loadOperations(server: BenchProcess, m: SnomedLike, auth: Record<string, string>, options: ScaleOptions): Promise<DriverResult['ops']> {
  const random = prng(42);
  const pick = () => Math.floor(random() * m.size);
  const members = descendants(m, m.focus);
  const system = encodeURIComponent(SNOMED_LIKE_URL);
  const json = { ...auth, 'content-type': 'application/fhir+json' };

  const lookups = Array.from({ length: 2000 }, pick);
  // $subsumes: half related pairs (an ancestor reached by walking up), half random pairs.
  const pairs = Array.from({ length: 2000 }, (_, k) => {
    const b = pick();
    if (k % 2 === 1) return [pick(), b];
    let a = b;
    for (let up = 1 + Math.floor(random() * 6); up > 0 && m.parentStart[a + 1] > m.parentStart[a]; up--) {
      a = m.parents[m.parentStart[a] + Math.floor(random() * (m.parentStart[a + 1] - m.parentStart[a]))];
    }
    return k % 4 === 0 ? [a, b] : [b, a];
  });
  const validations = Array.from({ length: 2000 }, (_, k) => (k % 2 === 0 ? members[Math.floor(random() * members.length)] : pick()));
  const validateBody = (i: number) =>
    JSON.stringify({
      resourceType: 'Parameters',
      parameter: [
        { name: 'url', valueUri: `${VALUE_SET_BASE}/isa` },
        { name: 'coding', valueCoding: { system: SNOMED_LIKE_URL, code: m.codes[i] } },
      ],
    });
  const created = await (
    await fetch(`${server.url}/fhir/R4/Patient`, { method: 'POST', headers: json, body: JSON.stringify({ resourceType: 'Patient', name: [{ family: 'Bench' }] }) })
  ).json() as { id: string };

  const ops: Array<{ name: string; requests: Req[]; check: (k: number, body: Record<string, unknown>) => boolean }> = [
    {
      name: '`GET CodeSystem/$lookup`',
      requests: lookups.map((i) => ({ method: 'GET', path: `/fhir/R4/CodeSystem/$lookup?system=${system}&code=${m.codes[i]}` })),
      check: (k, body) => param(body, 'display') === m.displays[lookups[k]],
    },
    {
      name: '`GET CodeSystem/$subsumes`',
      requests: pairs.map(([a, b]) => ({ method: 'GET', path: `/fhir/R4/CodeSystem/$subsumes?system=${system}&codeA=${m.codes[a]}&codeB=${m.codes[b]}` })),
      check: (k, body) => {
        const [a, b] = pairs[k];
        const expected = a === b ? 'equivalent' : isAncestorOrSelf(m, a, b) ? 'subsumes' : isAncestorOrSelf(m, b, a) ? 'subsumed-by' : 'not-subsumed';
        return param(body, 'outcome') === expected;
      },
    },
    {
      name: `\`POST ValueSet/$validate-code\` (is-a, ${Math.round(m.focusMembers / 1000)}k members)`,
      requests: validations.map((i) => ({ method: 'POST', path: '/fhir/R4/ValueSet/$validate-code', body: validateBody(i), headers: json })),
      check: (k, body) => param(body, 'result') === isAncestorOrSelf(m, m.focus, validations[k]),
    },
    {
      // The same questions as a GET: what the POST's body costs (reading, parsing, the key) shows beside it.
      name: `\`GET ValueSet/$validate-code\` (is-a, ${Math.round(m.focusMembers / 1000)}k members)`,
      requests: validations.map((i) => ({ method: 'GET', path: `/fhir/R4/ValueSet/$validate-code?url=${encodeURIComponent(`${VALUE_SET_BASE}/isa`)}&system=${system}&code=${m.codes[i]}` })),
      check: (k, body) => param(body, 'result') === isAncestorOrSelf(m, m.focus, validations[k]),
    },
    {
      name: '`GET Patient/<id>`',
      requests: [{ method: 'GET', path: `/fhir/R4/Patient/${created.id}` }],
      check: (_k, body) => body.id === created.id,
    },
  ];
  const results: DriverResult['ops'] = [];
  for (const op of ops) {
    const n = Math.min(options.samples, op.requests.length);
    for (let k = 0; k < n; k++) {
      const r = op.requests[k];
      const res = await fetch(server.url + r.path, { method: r.method, headers: r.headers ?? auth, body: r.body });
      const body = (await res.json()) as Record<string, unknown>;
      if (!res.ok || !op.check(k, body)) throw new Error(`wrong answer for ${op.name} ${r.path} ${r.body ?? ''}: ${res.status} ${JSON.stringify(body).slice(0, 400)}`);
    }
    console.error(`  ${op.name}: ${n}/${n} answers correct; loading …`);
    await warmUp(server.url, op.requests.slice(0, WARM_RUN).map((r) => ({ ...r, headers: r.headers ?? auth })));
    const load_ = await loadList(server.url, op.requests.map((r) => ({ ...r, headers: r.headers ?? auth })), options);
    results.push({ name: op.name, load: load_, checked: n });
  }
  return results;
}

function param(body: Record<string, unknown>, name: string): unknown {
  const p = (body.parameter as Array<Record<string, unknown>> | undefined)?.find((x) => x.name === name);
  return p && (p.valueString ?? p.valueCode ?? p.valueBoolean);
}

/** Sequential requests in a row that must each answer within WARM_MS for the server to count as warm. */
const WARM_RUN = 50;
const WARM_MS = 20;
const WARM_LIMIT_MS = 180_000;

/**
 * Sends `requests` one at a time (rotating) until WARM_RUN in a row each answered within
 * WARM_MS — the point operations answer from memory in a few ms, from SQL (while an index
 * loads) in tens to hundreds. Resolves with the time it took, or undefined after WARM_LIMIT_MS.
 */
async function warmUp(url: string, requests: Req[]): Promise<number | undefined> {
  const started = performance.now();
  let run = 0;
  for (let i = 0; performance.now() - started < WARM_LIMIT_MS; i++) {
    const r = requests[i % requests.length];
    const t = performance.now();
    const res = await fetch(url + r.path, { method: r.method, headers: r.headers, body: r.body });
    await res.arrayBuffer();
    run = performance.now() - t <= WARM_MS ? run + 1 : 0;
    if (run >= WARM_RUN) return performance.now() - started;
  }
  return undefined;
}

/** A body like a `$lookup` answer, for the bare server. */
function lookupLike(m: SnomedLike): unknown {
  return {
    resourceType: 'Parameters',
    parameter: [
      { name: 'name', valueString: 'SnomedLike' },
      { name: 'version', valueString: '1' },
      { name: 'display', valueString: m.displays[1] },
    ],
  };
}

function folderSize(path: string): number {
  let total = 0;
  for (const name of readdirSync(path)) {
    const p = join(path, name);
    const s = statSync(p);
    total += s.isDirectory() ? folderSize(p) : s.size;
  }
  return total;
}

function countMulti(m: SnomedLike): number {
  let n = 0;
  for (let i = 0; i < m.size; i++) if (m.parentStart[i + 1] - m.parentStart[i] > 1) n++;
  return Math.round((n / m.size) * 100);
}

const mb = (bytes: number) => (bytes >= 1e9 ? `${(bytes / 1e9).toFixed(2)} GB` : `${(bytes / 1e6).toFixed(0)} MB`);

function report(results: DriverResult[], options: ScaleOptions, generated: string): string {
  const names = { pglite: 'Lattice PGlite', pg: 'Lattice PostgreSQL' };
  const goals = ['≥ 35%, p99 ≤ 10 ms', '≥ 35%, p99 ≤ 10 ms', '≥ 30%, p99 ≤ 10 ms', '≥ 30%, p99 ≤ 10 ms', '≥ 30% on both'];
  const lines = [
    `## Terminology at scale (${options.size.toLocaleString('en')} concepts; ${options.connections} connections, ${options.seconds} s per case)`,
    '',
    generated,
    '',
    `| | ${results.map((r) => names[r.driver]).join(' | ')} | goal |`,
    `|---|${results.map(() => '---|').join('')}---|`,
    `| bare node:http (baseline, same run) | ${results.map((r) => `${fmt(r.baseline.rps)}/s`).join(' | ')} | |`,
  ];
  results[0]?.ops.forEach((op, k) => {
    const cells = results.map((r) => {
      const o = r.ops[k];
      const bad = o.load.errors + o.load.non2xx > 0 ? `, ${o.load.errors} errors, ${o.load.non2xx} non-2xx` : '';
      return `${fmt(o.load.rps)}/s = **${((o.load.rps / r.baseline.rps) * 100).toFixed(1)}%**, p50 ${o.load.p50} ms, p99 ${o.load.p99} ms (${o.checked} answers checked${bad})`;
    });
    lines.push(`| ${op.name} | ${cells.join(' | ')} | ${goals[k]} |`);
  });
  lines.push(`| import (CLI, process wall time, peak RSS) | ${results.map((r) => `${r.importSeconds.toFixed(1)} s, ${mb(r.importPeakRss)}`).join(' | ')} | ≤ 45 s, ≤ 1 GB |`);
  lines.push(`| database size after import | ${results.map((r) => `${mb(r.dbBytes)}${r.driver === 'pglite' ? ' (data folder)' : ' (pg_database_size)'}`).join(' | ')} | ≤ 0.8 GB |`);
  lines.push(`| start → first \`$lookup\` on the existing database | ${results.map((r) => `${r.firstLookupSeconds.toFixed(1)} s`).join(' | ')} | ≤ 2 s |`);
  lines.push(`| start → index warm (${WARM_RUN} \`$lookup\`s in a row each ≤ ${WARM_MS} ms) | ${results.map((r) => (r.warmSeconds === undefined ? 'not within 180 s' : `${r.warmSeconds.toFixed(1)} s`)).join(' | ')} | |`);
  lines.push(`| server RSS after the load | ${results.map((r) => mb(r.serverRss)).join(' | ')} | |`);
  return lines.join('\n') + '\n';
}

function fmt(n: number): string {
  return Math.round(n).toLocaleString('en');
}
