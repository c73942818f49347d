#!/usr/bin/env node
// Server CPU per warm point operation (`$lookup`, `$subsumes`, `$validate-code`) for each code
// system family — a CodeSystem held as a resource, SNOMED CT, LOINC, UCUM — for an A/B of two
// builds on one machine (the load generator's CPU does not count; see bench/cpu-server.mjs).
//
//   node bench/cpu-point-ops.mjs --prepare DATA   # once: a small SNOMED CT RF2 edition and a
//                                                 # LOINC release imported into a PGlite folder
//   node bench/cpu-point-ops.mjs DIR DATA [port]  # a checkout's built server on a copy of DATA
//
// The releases come from the project's generators (bench/snomed-rf2.ts, bench/loinc-like.ts;
// BENCH_POINT_SIZE concepts/terms, default 5,000) and are imported by the checkout running
// --prepare, so both builds answer from the same data. Every case is checked (2xx) before it is
// measured; a case a family does not support (its first answer not 2xx) is reported as such.
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import autocannon from 'autocannon';
import { withMeasuredServer } from './cpu-server.mjs';

const SIZE = Number(process.env.BENCH_POINT_SIZE ?? 5000);
const SCT = 'http://snomed.info/sct';
const LOINC = 'http://loinc.org';
const UCUM = 'http://unitsofmeasure.org';
const CS = 'http://example.org/cpu';
const BARE_BODY = JSON.stringify({ resourceType: 'Parameters', parameter: [{ name: 'outcome', valueCode: 'subsumes' }] });
const UNITS = ['mg/dL', 'mmol/L', 'kg', '10*3/uL', 'mL/min/{1.73_m2}', 'ug/L', '%', 'g/dL', 'U/L', 'mm[Hg]'];

if (process.argv[2] === '--prepare') {
  const out = resolve(process.argv[3]);
  const dist = resolve('dist/bench');
  const { generateSnomedLike } = await import(join(dist, 'snomed-like.js'));
  const { writeRf2 } = await import(join(dist, 'snomed-rf2.js'));
  const { writeLoincLike, RELEASE_SIZE } = await import(join(dist, 'loinc-like.js'));
  const rf2 = await writeRf2(generateSnomedLike(SIZE), join(out, 'rf2'), { date: '20250131' });
  const scale = SIZE / RELEASE_SIZE.terms;
  const loinc = writeLoincLike(out, { ...RELEASE_SIZE, terms: SIZE, parts: Math.round(RELEASE_SIZE.parts * scale), answerLists: Math.round(RELEASE_SIZE.answerLists * scale) }, '2.99');
  const env = { ...process.env, LATTICE_DATA_DIR: join(out, 'data'), LOG_LEVEL: 'warn', LATTICE_ADMIN_PASSWORD: 'admin-password-123' };
  for (const args of [['--format', 'rf2', rf2.folder], ['--format', 'loinc', loinc]]) {
    const r = spawnSync(process.execPath, ['dist/lattice.js', 'import', ...args], { env, stdio: 'inherit' });
    if (r.status !== 0) process.exit(r.status ?? 1);
  }
  console.log(`prepared ${out}/data`);
  process.exit(0);
}

const dir = resolve(process.argv[2] ?? '.');
const data = resolve(process.argv[3]);
const port = Number(process.argv[4] ?? 18110);
const copy = mkdtempSync(join(tmpdir(), 'lattice-point-ops-'));
cpSync(data, copy, { recursive: true });
const only = process.env.BENCH_POINT_ONLY; // e.g. "LOINC" to run one family
// BENCH_POINT_COLD=1: BENCH_POINT_DISTINCT (default 20,000) distinct questions per case asked in
// turn — more than the kept answers hold (src/terminology/operations/answer-cache.ts: two
// generations of 4,096), so every answer is computed; the prepared data must hold that many
// codes (--prepare with BENCH_POINT_SIZE ≥ BENCH_POINT_DISTINCT). Else a hot set of a few
// hundred codes (100 subsumption pairs, 10 units) that the answer cache holds.
const cold = process.env.BENCH_POINT_COLD === '1';
const DISTINCT = cold ? Number(process.env.BENCH_POINT_DISTINCT ?? 20000) : 400;

try {
  await withMeasuredServer({ dir, port, startTries: 300, env: { LATTICE_DATA_DIR: join(copy, 'data'), LATTICE_BASE_TERMINOLOGY: 'lazy' } }, async ({ base, headers, rounds, idle }) => {
    const get = async (path) => {
      const res = await fetch(base + path, { headers });
      return { status: res.status, body: await res.json().catch(() => undefined) };
    };
    const concepts = Math.max(5000, DISTINCT);
    const concept = Array.from({ length: concepts }, (_, i) => ({
      code: `c${i}`,
      display: `Concept ${i}`,
      designation: [{ language: 'de', value: `Begriff ${i}` }],
      ...(i > 0 ? { property: [{ code: 'parent', valueCode: `c${Math.floor((i - 1) / 3)}` }] } : {}),
    }));
    const body = { resourceType: 'CodeSystem', id: 'cpu', url: CS, status: 'active', content: 'complete', property: [{ code: 'parent', type: 'code' }], concept };
    const put = await fetch(`${base}/fhir/R4/CodeSystem/cpu`, { method: 'PUT', headers: { ...headers, 'content-type': 'application/fhir+json' }, body: JSON.stringify(body) });
    if (put.status > 201) throw new Error(`storing the code system: ${put.status} ${await put.text()}`);
    // The releases' indexes are built on first use: an expansion of each waits for it.
    const sctCodes = [];
    for (const [vs, into] of [[`${SCT}?fhir_vs`, sctCodes], [`${LOINC}/vs`, undefined]]) {
      const r = await get(`/fhir/R4/ValueSet/$expand?url=${encodeURIComponent(vs)}&count=${DISTINCT}&offset=${cold ? 0 : 100}`);
      if (r.status !== 200) throw new Error(`expand ${vs}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
      if (into) for (const c of r.body.expansion?.contains ?? []) into.push(c.code);
    }
    const { termCode } = await import(join(dir, 'dist/bench/loinc-like.js'));
    const loincCodes = Array.from({ length: DISTINCT }, (_, i) => termCode((i * 37) % SIZE));
    // Subsumption pairs: a code and its parent (from `$lookup`'s parent property).
    const pairs = async (system, codes) => {
      const out = [];
      for (const code of codes.slice(0, 100)) {
        const r = await get(`/fhir/R4/CodeSystem/$lookup?system=${encodeURIComponent(system)}&code=${encodeURIComponent(code)}&property=parent`);
        const parent = r.body?.parameter?.find((p) => p.name === 'property' && p.part?.some((x) => x.name === 'code' && x.valueCode === 'parent'));
        const value = parent?.part?.find((x) => x.name === 'value');
        if (value?.valueCode) out.push([value.valueCode, code]);
      }
      return out.length > 0 ? out : codes.map((c, i) => [c, codes[(i + 1) % codes.length]]);
    };
    await idle(); // the releases' indexes are built in the background: not measured
    const csCodes = Array.from({ length: DISTINCT }, (_, i) => `c${(i * 7) % concepts}`);
    const families = [
      ['CodeSystem resource', CS, csCodes],
      ['SNOMED CT', SCT, sctCodes],
      ['LOINC', LOINC, loincCodes],
      ['UCUM', UCUM, cold ? Array.from({ length: DISTINCT }, (_, i) => `${i + 2}.${UNITS[i % UNITS.length]}`) : UNITS],
    ];
    const results = [];
    for (const [family, system, codes] of families) {
      if (only && !family.includes(only)) continue;
      const s = encodeURIComponent(system);
      const sub = cold ? codes.map((c, i) => [codes[(i * 13 + 1) % codes.length], c]) : await pairs(system, codes);
      const cases = [
        ['$lookup', (i) => `/fhir/R4/CodeSystem/$lookup?system=${s}&code=${encodeURIComponent(codes[i % codes.length])}`],
        ['$subsumes', (i) => `/fhir/R4/CodeSystem/$subsumes?system=${s}&codeA=${encodeURIComponent(sub[i % sub.length][0])}&codeB=${encodeURIComponent(sub[i % sub.length][1])}`],
        ['$validate-code', (i) => `/fhir/R4/CodeSystem/$validate-code?url=${s}&code=${encodeURIComponent(codes[i % codes.length])}`],
      ];
      for (const [op, path] of cases) {
        let i = 0;
        const first = await get(path(0));
        if (first.status !== 200) {
          results.push(`${family} ${op}: not measured (${first.status} ${JSON.stringify(first.body?.issue?.[0]?.diagnostics ?? first.body?.issue?.[0]?.details?.text ?? '')})`);
          continue;
        }
        for (let i = 0; i < 300; i++) await get(path(i));
        await rounds({ connections: 16, amount: 1000, requests: [{ setupRequest: (req) => ({ ...req, path: path(i++) }) }] }, 'warm-up');
        let n = 0;
        const figures = await rounds({ connections: 16, amount: Number(process.env.BENCH_POINT_AMOUNT ?? 8000), requests: [{ setupRequest: (req) => ({ ...req, path: path((n++ * 7) % DISTINCT) }) }] }, `${family} ${op}`);
        results.push(`${family} ${op}: ${figures.join(', ')} µs (${JSON.stringify(first.body).length} bytes)`);
        console.error(results.at(-1));
      }
    }
    results.push(`bare node:http server (a ${BARE_BODY.length}-byte body): ${(await bareCpu()).join(', ')} µs`);
    console.log(`${dir}: server CPU per request, three rounds:\n${results.join('\n')}`);
  });
} finally {
  rmSync(copy, { recursive: true, force: true });
}



/** The same measure of a bare node:http server answering a `$subsumes`-sized body: the ratio's denominator. */
async function bareCpu() {
  const code = `require('node:http').createServer((q, s) => { s.writeHead(200, { 'content-type': 'application/fhir+json' }); s.end(${JSON.stringify(BARE_BODY)}); }).listen(${port + 1})`;
  const bare = spawn(process.execPath, ['-e', code], { stdio: 'ignore' });
  try {
    await new Promise((r) => setTimeout(r, 500));
    const cpu = () => readFileSync(`/proc/${bare.pid}/stat`, 'utf8').split(') ')[1].split(' ').slice(11, 13).reduce((a, b) => a + Number(b) * 10, 0);
    const figures = [];
    for (let round = 0; round < 4; round++) {
      const before = cpu();
      const result = await autocannon({ url: `http://127.0.0.1:${port + 1}/`, connections: 16, amount: Number(process.env.BENCH_POINT_AMOUNT ?? 8000) });
      if (round > 0) figures.push(Math.round(((cpu() - before) * 1000) / result.requests.total));
    }
    return figures;
  } finally {
    bare.kill('SIGTERM');
  }
}
