import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateSnomedLike, prng, type SnomedLike } from './snomed-like.js';
import { writeRf2, type Rf2Release } from './snomed-rf2.js';
import { startLatticeProcess } from './server-process.js';
import { benchPostgres } from './postgres.js';

/**
 * `npm run bench -- snomed`: a synthetic RF2 snapshot of International size (snomed-rf2.ts;
 * BENCH_SIZE concepts, default 370,000) imported with `lattice import --format rf2` on PGlite
 * (and PostgreSQL: BENCH_DATABASE_URL, else a private server when one can be started): wall
 * time, peak RSS, data size; then, on a server, ECL expansions cold (first evaluation, after
 * the edition's index is built) and warm, and `$lookup` latency.
 */

const MAIN = fileURLToPath(new URL('../src/main.js', import.meta.url));
const ADMIN = { LATTICE_ADMIN_PASSWORD: 'bench-admin-password-1', LOG_LEVEL: 'warn', LATTICE_BASE_TERMINOLOGY: 'lazy', LATTICE_DB_STATEMENT_TIMEOUT: '0' };

function vmHwm(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}

async function runImport(folder: string, env: NodeJS.ProcessEnv): Promise<{ seconds: number; peakRss: number }> {
  const started = performance.now();
  const child = spawn(process.execPath, [MAIN, 'import', '--format', 'rf2', folder], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += String(c)));
  child.stderr.on('data', (c: Buffer) => (out = (out + String(c)).slice(-4000)));
  let peakRss = 0;
  const timer = setInterval(() => (peakRss = Math.max(peakRss, vmHwm(child.pid as number))), 100);
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  clearInterval(timer);
  if (code !== 0) throw new Error(`lattice import --format rf2 failed (${code}):\n${out}`);
  return { seconds: (performance.now() - started) / 1000, peakRss };
}

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
    rows.push(`| ${driver} | first \`$lookup\` (builds the edition's index) | ${(first.ms / 1000).toFixed(1)} s (status ${first.status}) |`);
    const random = prng(5);
    const lookups: number[] = [];
    for (let i = 0; i < 200; i++) lookups.push((await timed(server.url, `/fhir/R4/CodeSystem/$lookup?system=${sct}&code=${r.ids[Math.floor(random() * r.ids.length)]}`, auth)).ms);
    lookups.sort((a, b) => a - b);
    rows.push(`| ${driver} | \`$lookup\` median / p95 (sequential) | ${lookups[100].toFixed(1)} / ${lookups[190].toFixed(1)} ms |`);
    // The model's focus: the concept whose descendants are closest to a seventh of the system.
    const focus = r.ids[m.focus];
    const cases: Array<[string, string]> = [
      ['`<< X`', `<< ${focus}`],
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
    console.error(`${driver}: done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  } finally {
    await server.stop();
  }
}

export async function benchSnomed(size: number): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-bench-rf2-'));
  try {
    const t0 = performance.now();
    const model = generateSnomedLike(size);
    const release = await writeRf2(model, join(dir, 'rf2'), { date: '20250131' });
    const rows = [
      `Synthetic RF2 snapshot: ${size.toLocaleString('en')} concepts, ${release.descriptions.toLocaleString('en')} descriptions, ${release.relationships.toLocaleString('en')} relationships (written in ${((performance.now() - t0) / 1000).toFixed(0)} s)`,
      '',
      '| driver | measure | value |',
      '|---|---|---|',
    ];
    const pgliteDir = join(dir, 'data');
    const env = { ...process.env, ...ADMIN, LATTICE_DATA_DIR: pgliteDir };
    const imported = await runImport(release.folder, env);
    rows.push(`| pglite | import (goal ≤ 3 min, ≤ 2 GiB) | ${imported.seconds.toFixed(0)} s, peak RSS ${(imported.peakRss / 2 ** 30).toFixed(2)} GiB, data folder ${(folderBytes(pgliteDir) / 2 ** 30).toFixed(2)} GiB |`);
    await measureServer({ LATTICE_DATA_DIR: pgliteDir }, model, release, rows, 'pglite');
    let postgres: Awaited<ReturnType<typeof benchPostgres>> | undefined;
    try {
      postgres = process.env.BENCH_SNOMED_PG === '0' ? undefined : await benchPostgres().catch(() => undefined);
      if (postgres) {
        const pgEnv = { ...process.env, ...ADMIN, DATABASE_URL: postgres.url };
        const pg = await runImport(release.folder, pgEnv);
        rows.push(`| pg | import (goal ≤ 3 min, ≤ 2 GiB) | ${pg.seconds.toFixed(0)} s, peak RSS ${(pg.peakRss / 2 ** 30).toFixed(2)} GiB, database ${((await postgres.size()) / 2 ** 30).toFixed(2)} GiB |`);
        await measureServer({ DATABASE_URL: postgres.url }, model, release, rows, 'pg');
      }
    } finally {
      await postgres?.stop();
    }
    return rows.join('\n');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
