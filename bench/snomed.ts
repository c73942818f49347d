import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, readdirSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadList, type ListRequest } from './load-list.js';
import { descendants, generateSnomedLike, prng, type SnomedLike } from './snomed-like.js';
import { rf2IsAncestorOrSelf, rf2Parents, writeRf2, type Rf2Release } from './snomed-rf2.js';
import { runLatticeImport, measureBare, startLatticeProcess } from './server-process.js';
import { benchPostgres } from './postgres.js';
import { restartRows } from './snomed-restart.js';

/**
 * `npm run bench -- snomed`: a synthetic RF2 snapshot of International size (snomed-rf2.ts;
 * BENCH_SIZE concepts, default 370,000) imported with `lattice import --format rf2` on PGlite
 * (and PostgreSQL: BENCH_DATABASE_URL, else a private server when one can be started): wall
 * time, peak RSS, data size; then, on a server, ECL expansions cold (first evaluation, after
 * the edition's index is built) and warm, `$lookup` latency, and `$lookup` and `$validate-code`
 * on a stored ECL ValueSet and `$subsumes` under load (BENCH_SECONDS per case, default 10; 32 connections) as a
 * ratio to a bare node:http server measured in the same run. Before that, restart → first
 * answer (snomed-restart.ts): fresh servers on the imported data, the first `$lookup`,
 * `$subsumes` and ECL answers.
 *
 * BENCH_SNOMED_DIR keeps the release, the PGlite data and the PostgreSQL database URL in that
 * folder and reuses them on the next run (no generation, no import): for measuring restarts
 * again after a change. BENCH_SECONDS=0 skips the rows under load; BENCH_SNOMED_RESTART_ONLY=1
 * measures only the restarts (no ECL or latency rows).
 */

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = 32;
/** Questions of the "every answer computed" rows: more than a case sends at these rates (~20,000/s for 10 s). */
const COMPUTED = 200_000;
/** A prime: `i * STRIDE mod size` visits distinct concepts for i < size when size is not a multiple of it. */
const STRIDE = 7919;
const RESTART_ONLY = process.env.BENCH_SNOMED_RESTART_ONLY === '1';

type Req = ListRequest;

/** Requests per second (and p50 / p99 ms) of a rotating list of requests. */
async function underLoad(url: string, requests: Req[]): Promise<{ rps: number; p50: number; p99: number; non2xx: number; errors: number; load: string }> {
  const load = loadavg()[0].toFixed(1);
  return { ...(await loadList(url, requests, { seconds: SECONDS, connections: CONNECTIONS })), load };
}

// A fixed public URL: it is the tokens' issuer, so a token outlives a restart on another port (and the stored OperationDefinitions, which name it, stay as they are).
const ADMIN = { LATTICE_ADMIN_PASSWORD: 'bench-admin-password-1', LOG_LEVEL: 'warn', LATTICE_BASE_TERMINOLOGY: 'lazy', LATTICE_DB_STATEMENT_TIMEOUT: '0', LATTICE_PUBLIC_URL: 'http://lattice.bench' };

function folderBytes(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) n += e.isDirectory() ? folderBytes(join(dir, e.name)) : statSync(join(dir, e.name)).size;
  return n;
}

async function token(url: string): Promise<string> {
  const login = await fetch(`${url}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'admin@example.com', password: ADMIN.LATTICE_ADMIN_PASSWORD }) });
  const { code } = (await login.json()) as { code: string };
  const res = await fetch(`${url}/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'authorization_code', code }) });
  return ((await res.json()) as { access_token: string }).access_token;
}

async function timed(url: string, path: string, auth: Record<string, string>): Promise<{ ms: number; status: number; total?: number }> {
  const t0 = performance.now();
  const res = await fetch(url + path, { headers: auth });
  const body = (await res.json()) as { expansion?: { total?: number } };
  return { ms: performance.now() - t0, status: res.status, total: body.expansion?.total };
}

async function measureServer(env: Record<string, string>, m: SnomedLike, r: Rf2Release, rows: string[], driver: string): Promise<void> {
  const server = await startLatticeProcess({ ...ADMIN, ...env });
  try {
    const auth = { authorization: `Bearer ${await token(server.url)}` };
    const sct = 'http://snomed.info/sct';
    const t0 = performance.now();
    const first = await timed(server.url, `/fhir/R4/CodeSystem/$lookup?system=${sct}&code=${r.ids[1000]}`, auth);
    rows.push(`| ${driver} | first \`$lookup\` after the restarts above | ${(first.ms / 1000).toFixed(1)} s (status ${first.status}) |`);
    const random = prng(5);
    const lookups: number[] = [];
    for (let i = 0; i < 200; i++) lookups.push((await timed(server.url, `/fhir/R4/CodeSystem/$lookup?system=${sct}&code=${r.ids[Math.floor(random() * r.ids.length)]}`, auth)).ms);
    lookups.sort((a, b) => a - b);
    rows.push(`| ${driver} | \`$lookup\` median / p95 (sequential) | ${lookups[100].toFixed(1)} / ${lookups[190].toFixed(1)} ms |`);
    // The model's focus: the concept whose descendants are closest to a seventh of the system.
    const focus = r.ids[m.focus];
    const cases: Array<[string, string]> = [
      ['`<< X`', `<< ${focus}`],
      ['refinement over the whole hierarchy', `< ${r.ids[0]} : ${r.attributes[2]} = *`],
      ['refinement with a group', `<< ${focus} : { ${r.attributes[0]} = *, ${r.attributes[1]} = * }`],
      ['`^ refset`', `^ ${r.refset}`],
      ['`MINUS`', `<< ${focus} MINUS ^ ${r.refset}`],
      ['description filter (reads the dialects)', `<< ${focus} {{ D term = "acute", dialect = en-gb (prefer) }}`],
    ];
    for (const [label, ecl] of cases) {
      const path = `/fhir/R4/ValueSet/$expand?count=10&url=${encodeURIComponent(`${sct}?fhir_vs=ecl/${ecl}`)}`;
      const cold = await timed(server.url, path, auth);
      const warm = await timed(server.url, path, auth);
      rows.push(`| ${driver} | ECL ${label} (${cold.total ?? '?'} concepts): cold / warm \`$expand\` | ${cold.ms.toFixed(0)} / ${warm.ms.toFixed(0)} ms |`);
    }
    if (SECONDS > 0) await loadRows(server.url, auth, m, r, rows, driver);
    console.error(`${driver}: done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  } finally {
    await server.stop();
  }
}

/**
 * `$lookup` of random concepts and `$validate-code` against a stored ECL ValueSet (`<< X`, half
 * the codes members) under load, each checked first, and a bare server in the same run.
 */
async function loadRows(url: string, auth: Record<string, string>, m: SnomedLike, r: Rf2Release, rows: string[], driver: string): Promise<void> {
  const sct = 'http://snomed.info/sct';
  const json = { ...auth, 'content-type': 'application/fhir+json' };
  const vsUrl = 'http://example.org/bench/ValueSet/ecl';
  const put = await fetch(`${url}/fhir/R4/ValueSet/bench-ecl`, {
    method: 'PUT',
    headers: json,
    body: JSON.stringify({ resourceType: 'ValueSet', id: 'bench-ecl', url: vsUrl, status: 'active', compose: { include: [{ system: sct, filter: [{ property: 'constraint', op: '=', value: `<< ${r.ids[m.focus]}` }] }] } }),
  });
  if (!put.ok) throw new Error(`PUT ValueSet: ${put.status} ${await put.text()}`);
  const random = prng(11);
  // Members: a page of the value set's expansion (the server's answer, taken as it is).
  const page = await fetch(`${url}/fhir/R4/ValueSet/$expand?url=${encodeURIComponent(vsUrl)}&count=500&offset=${Math.floor(descendants(m, m.focus).length / 3)}`, { headers: auth });
  const inside = (((await page.json()) as { expansion?: { contains?: Array<{ code: string }> } }).expansion?.contains ?? []).map((c) => c.code);
  if (inside.length === 0) throw new Error('the ECL value set has no members');
  const lookups: Req[] = Array.from({ length: 500 }, () => ({ method: 'GET', path: `/fhir/R4/CodeSystem/$lookup?system=${sct}&code=${r.ids[Math.floor(random() * r.ids.length)]}`, headers: auth }));
  const expected: boolean[] = [];
  const validations: Req[] = Array.from({ length: 500 }, (_, i) => {
    const member = i % 2 === 0;
    const code = member ? inside[Math.floor(random() * inside.length)] : r.ids[Math.floor(random() * r.ids.length)];
    expected.push(member);
    return { method: 'GET', path: `/fhir/R4/ValueSet/$validate-code?url=${encodeURIComponent(vsUrl)}&system=${sct}&code=${code}`, headers: auth };
  });
  // Check the answers before timing them (members must validate; the others may be inside by chance).
  for (const [i, v] of validations.slice(0, 50).entries()) {
    const res = await fetch(url + v.path, { headers: auth });
    const body = (await res.json()) as { parameter?: Array<{ name: string; valueBoolean?: boolean }> };
    const result = body.parameter?.find((p) => p.name === 'result')?.valueBoolean;
    if (res.status !== 200 || (expected[i] && result !== true)) throw new Error(`wrong $validate-code answer ${v.path}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
  }
  for (const l of lookups.slice(0, 50)) {
    const res = await fetch(url + l.path, { headers: auth });
    if (res.status !== 200) throw new Error(`wrong $lookup answer ${l.path}: ${res.status}`);
  }
  // $subsumes: half a concept and an ancestor reached by walking up its parents (either way
  // round), half two random concepts; the outcomes of a sample checked against the model.
  // The is-a graph is the release's (rf2Parents: inactive concepts have no relationships).
  // Distinct `b`s (a stride coprime with any size these runs use), so no pair is asked twice.
  const pairs = Array.from({ length: COMPUTED }, (_, k) => {
    const b = (k * STRIDE) % m.size;
    if (k % 2 === 1) return [Math.floor(random() * m.size), b];
    let a = b;
    for (let up = 1 + Math.floor(random() * 6), parents = rf2Parents(m, a); up > 0 && parents.length > 0; up--, parents = rf2Parents(m, a)) {
      a = parents[Math.floor(random() * parents.length)];
    }
    return k % 4 === 0 ? [a, b] : [b, a];
  });
  const subsumptions: Req[] = pairs.map(([a, b]) => ({ method: 'GET', path: `/fhir/R4/CodeSystem/$subsumes?system=${sct}&codeA=${r.ids[a]}&codeB=${r.ids[b]}`, headers: auth }));
  for (const [k, s] of subsumptions.slice(0, 100).entries()) {
    const [a, b] = pairs[k];
    const expected = a === b ? 'equivalent' : rf2IsAncestorOrSelf(m, a, b) ? 'subsumes' : rf2IsAncestorOrSelf(m, b, a) ? 'subsumed-by' : 'not-subsumed';
    const res = await fetch(url + s.path, { headers: auth });
    const body = (await res.json()) as { parameter?: Array<{ name: string; valueCode?: string }> };
    if (res.status !== 200 || body.parameter?.find((p) => p.name === 'outcome')?.valueCode !== expected) throw new Error(`wrong $subsumes answer ${s.path} (expected ${expected}): ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
  }
  // Each list is cycled: 500 questions are asked again and again (the answer cache keeps them,
  // docs/terminology.md#answer-cache); COMPUTED are more than a case sends, so none is asked
  // twice and every answer is computed (5,000 were, once the cache held 4,096–8,192 answers).
  const coldLookups: Req[] = Array.from({ length: COMPUTED }, (_, i) => ({ method: 'GET', path: `/fhir/R4/CodeSystem/$lookup?system=${sct}&code=${r.ids[(i * STRIDE) % r.ids.length]}`, headers: auth }));
  const lookup = await underLoad(url, lookups);
  const coldLookup = await underLoad(url, coldLookups);
  const validate = await underLoad(url, validations);
  const subsume = await underLoad(url, subsumptions.slice(0, 500));
  const coldSubsume = await underLoad(url, subsumptions);
  const bareBody = JSON.stringify({ resourceType: 'Parameters', parameter: [{ name: 'name', valueString: 'SNOMED CT' }, { name: 'display', valueString: 'Bench concept' }] });
  const baseline = await measureBare(bareBody, (url) => underLoad(url, [{ method: 'GET', path: '/' }]));
  const line = (label: string, x: typeof lookup) =>
    `| ${driver} | ${label} under load (${CONNECTIONS} connections, ${SECONDS} s; load average ${x.load}; goal ≥ 50% of the bare server, p99 ≤ 10 ms) | ${x.rps.toFixed(0)} req/s, p50 ${x.p50} / p99 ${x.p99} ms, ${((100 * x.rps) / baseline.rps).toFixed(0)}% of the bare server${x.non2xx + x.errors > 0 ? ` (${x.non2xx} non-2xx, ${x.errors} errors)` : ''} |`;
  rows.push(line('`$lookup` (500 random concepts, asked again)', lookup));
  rows.push(line(`\`$lookup\` (${COMPUTED.toLocaleString('en')} distinct concepts, none asked twice: every answer computed)`, coldLookup));
  rows.push(line('`$validate-code` on an ECL ValueSet (`<< X`, 500 codes)', validate));
  rows.push(line('`$subsumes` (500 pairs: half a concept and an ancestor, half random)', subsume));
  rows.push(line(`\`$subsumes\` (${COMPUTED.toLocaleString('en')} distinct such pairs, none asked twice: every answer computed)`, coldSubsume));
  rows.push(`| ${driver} | bare node:http server, same run (load average ${baseline.load}) | ${baseline.rps.toFixed(0)} req/s |`);
}

export async function benchSnomed(size: number): Promise<string> {
  const kept = process.env.BENCH_SNOMED_DIR;
  const dir = kept ?? mkdtempSync(join(tmpdir(), 'lattice-bench-rf2-'));
  try {
    const t0 = performance.now();
    const model = generateSnomedLike(size);
    const saved = join(dir, 'release.json');
    const reuse = kept !== undefined && existsSync(saved);
    const release = reuse ? (JSON.parse(readFileSync(saved, 'utf8')) as Rf2Release) : await writeRf2(model, join(dir, 'rf2'), { date: '20250131' });
    if (release.ids.length !== size) throw new Error(`${saved} holds ${release.ids.length} concepts, BENCH_SIZE is ${size}`);
    if (kept && !reuse) writeFileSync(saved, JSON.stringify(release));
    const rows = [
      `Synthetic RF2 snapshot: ${size.toLocaleString('en')} concepts, ${release.descriptions.toLocaleString('en')} descriptions, ${release.relationships.toLocaleString('en')} relationships (${reuse ? `reused from ${dir}` : `written in ${((performance.now() - t0) / 1000).toFixed(0)} s`})`,
      '',
      '| driver | measure | value |',
      '|---|---|---|',
    ];
    const pgliteDir = join(dir, 'data');
    if (!(reuse && existsSync(pgliteDir))) {
      const env = { ...process.env, ...ADMIN, LATTICE_DATA_DIR: pgliteDir };
      const imported = await runLatticeImport(['--format', 'rf2', release.folder], env);
      rows.push(`| pglite | import (goal ≤ 3 min, ≤ 2 GiB) | ${imported.seconds.toFixed(0)} s, peak RSS ${(imported.peakRss / 2 ** 30).toFixed(2)} GiB, data folder ${(folderBytes(pgliteDir) / 2 ** 30).toFixed(2)} GiB |`);
    }
    await restartRows({ ...ADMIN, LATTICE_DATA_DIR: pgliteDir }, model, release, rows, 'pglite', token);
    if (!RESTART_ONLY) await measureServer({ LATTICE_DATA_DIR: pgliteDir }, model, release, rows, 'pglite');
    if (process.env.BENCH_SNOMED_PG !== '0') await benchSnomedPostgres(dir, reuse, model, release, rows);
    return rows.join('\n');
  } finally {
    if (!kept) rmSync(dir, { recursive: true, force: true });
  }
}

/** The PostgreSQL half: a private server (or BENCH_DATABASE_URL), kept running with BENCH_SNOMED_DIR (its URL in `pg-url`). */
async function benchSnomedPostgres(dir: string, reuse: boolean, model: SnomedLike, release: Rf2Release, rows: string[]): Promise<void> {
  const urlFile = join(dir, 'pg-url');
  const kept = process.env.BENCH_SNOMED_DIR !== undefined;
  let postgres: Awaited<ReturnType<typeof benchPostgres>> | undefined;
  try {
    let url = reuse && existsSync(urlFile) ? readFileSync(urlFile, 'utf8').trim() : undefined;
    if (!url) {
      postgres = await benchPostgres().catch(() => undefined);
      if (!postgres) return;
      url = postgres.url;
      const pg = await runLatticeImport(['--format', 'rf2', release.folder], { ...process.env, ...ADMIN, DATABASE_URL: url });
      rows.push(`| pg | import (goal ≤ 3 min, ≤ 2 GiB) | ${pg.seconds.toFixed(0)} s, peak RSS ${(pg.peakRss / 2 ** 30).toFixed(2)} GiB, database ${((await postgres.size()) / 2 ** 30).toFixed(2)} GiB |`);
      if (kept) writeFileSync(urlFile, url);
    }
    await restartRows({ ...ADMIN, DATABASE_URL: url }, model, release, rows, 'pg', token);
    if (!RESTART_ONLY) await measureServer({ DATABASE_URL: url }, model, release, rows, 'pg');
  } finally {
    // A kept database stays up for the next run (stop it with pg_ctl when done).
    if (!kept) await postgres?.stop();
  }
}
