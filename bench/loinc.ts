import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load, table, type LoadResult } from './http-load.js';
import { RELEASE_SIZE, termCode, writeLoincLike, type LoincLikeSize } from './loinc-like.js';
import { runLatticeImport, measureBare, startLatticeProcess } from './server-process.js';

const ADMIN_PASSWORD = 'bench-password-123';
const UNITS = ['mg/dL', 'mmol/L', 'kg', '10*3/uL', 'mL/min/{1.73_m2}', 'ug/L', '%', 'g/dL', 'U/L', 'mm[Hg]'];

/**
 * `npm run bench -- loinc`: a made-up LOINC release of a real release's size (bench/loinc-like.ts,
 * BENCH_LOINC_TERMS scales it) is imported with `lattice import --format loinc` into a fresh
 * PGlite data folder; reports the import's wall time and the peak resident memory of the
 * process (goal: ≤ 90 s, ≤ 1.5 GiB; docs/terminology.md#loinc). Then a server on that data
 * answers `$lookup` and `$validate-code` of random LOINC terms and of UCUM units under load
 * (BENCH_SECONDS each, 32 connections), as a ratio to a bare node:http server in the same run
 * (goal ≥ 30%).
 */
export async function benchLoinc(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-bench-loinc-'));
  try {
    const terms = Number(process.env.BENCH_LOINC_TERMS ?? RELEASE_SIZE.terms);
    const scale = terms / RELEASE_SIZE.terms;
    const size: LoincLikeSize = { ...RELEASE_SIZE, terms, parts: Math.round(RELEASE_SIZE.parts * scale), answerLists: Math.round(RELEASE_SIZE.answerLists * scale) };
    const started = Date.now();
    const release = writeLoincLike(dir, size, '2.99');
    const generated = (Date.now() - started) / 1000;
    const imported = await runLatticeImport(['--format', 'loinc', release], { ...process.env, LATTICE_DATA_DIR: join(dir, 'data'), LOG_LEVEL: 'warn', LATTICE_ADMIN_PASSWORD: ADMIN_PASSWORD });
    const { seconds, peakRss: peak } = imported;
    const concepts = /ValueSets, (\d+) concepts/.exec(imported.stdout)?.[1] ?? '?';
    const underLoad = await loadCases(join(dir, 'data'), size.terms, Number(process.env.BENCH_SECONDS ?? 10));
    return [
      `### LOINC import (PGlite)`,
      '',
      `| release | codes | import | peak RSS |`,
      `|---|---|---|---|`,
      `| ${size.terms.toLocaleString('en')} terms, ${size.parts.toLocaleString('en')} parts, ${(size.terms * 6).toLocaleString('en')} part links, ${(size.terms * size.languages).toLocaleString('en')} variant rows (generated in ${generated.toFixed(0)} s) | ${Number(concepts).toLocaleString('en')} | ${seconds.toFixed(1)} s | ${(peak / 2 ** 30).toFixed(2)} GiB |`,
      '',
      `### LOINC and UCUM under load (PGlite, 32 connections)`,
      '',
      underLoad,
    ].join('\n');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `$lookup` and `$validate-code` of LOINC terms and UCUM units against the imported data, then the bare server. */
async function loadCases(dataDir: string, terms: number, seconds: number): Promise<string> {
  const rows: Array<[string, LoadResult]> = [];
  const started = performance.now();
  const server = await startLatticeProcess({ LATTICE_DATA_DIR: dataDir, LATTICE_ADMIN_PASSWORD: ADMIN_PASSWORD, LATTICE_BASE_TERMINOLOGY: 'lazy' });
  const firsts: string[] = [`server ready ${((performance.now() - started) / 1000).toFixed(1)} s after its start`];
  try {
    const login = await fetch(`${server.url}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'admin@example.com', password: ADMIN_PASSWORD }) });
    const { code } = (await login.json()) as { code: string };
    const tokenRes = await fetch(`${server.url}/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'authorization_code', code }) });
    const headers = { authorization: `Bearer ${((await tokenRes.json()) as { access_token: string }).access_token}` };
    let n = 0;
    const term = () => termCode(Math.floor(Math.random() * terms));
    const unit = () => UNITS[n++ % UNITS.length];
    const cases: Array<[string, () => string]> = [
      ['LOINC `$lookup`', () => `/fhir/R4/CodeSystem/$lookup?system=http://loinc.org&code=${term()}`],
      ['LOINC `$validate-code`', () => `/fhir/R4/CodeSystem/$validate-code?url=http://loinc.org&code=${term()}`],
      ['UCUM `$lookup`', () => `/fhir/R4/CodeSystem/$lookup?system=http://unitsofmeasure.org&code=${encodeURIComponent(unit())}`],
      ['UCUM `$validate-code`', () => `/fhir/R4/CodeSystem/$validate-code?url=http://unitsofmeasure.org&code=${encodeURIComponent(unit())}`],
    ];
    // Restart → first answer: the first `$lookup` of this fresh server, then the first
    // expansion, which waits for the release's index (read from the snapshot the import wrote;
    // point reads answer from SQL meanwhile). Then each case runs briefly, outside the measure.
    for (const [label, path] of [
      ['`$lookup`', cases[0][1]()],
      ['`$expand` (reads the index)', '/fhir/R4/ValueSet/$expand?url=http://loinc.org/vs&count=1'],
    ]) {
      const t0 = performance.now();
      const res = await fetch(server.url + path, { headers });
      if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
      firsts.push(`first ${label} ${((performance.now() - t0) / 1000).toFixed(2)} s`);
    }
    for (const [, path] of cases) {
      const res = await fetch(server.url + path(), { headers });
      if (!res.ok) throw new Error(`${path()}: ${res.status} ${await res.text()}`);
      await load(server.url, { seconds: 1, connections: 8, headers, body: () => ({ path: path(), body: '' }) });
    }
    // The baseline, and the same server answering a LOINC lookup's body: what the bytes alone cost.
    const lookupBody = await (await fetch(server.url + cases[0][1](), { headers })).text();
    for (const [name, body] of [
      ['bare node:http server', JSON.stringify({ resourceType: 'Parameters', parameter: [{ name: 'result', valueBoolean: true }] })],
      [`bare node:http server, a LOINC lookup's body (${(lookupBody.length / 1024).toFixed(1)} KB)`, lookupBody],
    ]) {
      rows.push([name, await measureBare(body, (url) => load(url, { seconds, connections: 32 }))]);
    }
    for (const [name, path] of cases) rows.push([name, await load(server.url, { seconds, connections: 32, headers, body: () => ({ path: path(), body: '' }) })]);
  } finally {
    await server.stop();
  }
  return `Restart → first answer: ${firsts.join(', ')}.\n\n${table(rows)}`;
}
