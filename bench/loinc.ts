import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectRoot } from '../src/paths.js';
import { RELEASE_SIZE, writeLoincLike, type LoincLikeSize } from './loinc-like.js';

/**
 * `npm run bench -- loinc`: a made-up LOINC release of a real release's size (bench/loinc-like.ts,
 * BENCH_LOINC_TERMS scales it) is imported with `lattice import --format loinc` into a fresh
 * PGlite data folder; reports the import's wall time and the peak resident memory of the
 * process (goal: ≤ 90 s, ≤ 1.5 GiB; docs/terminology.md#loinc).
 */
export async function benchLoinc(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-bench-loinc-'));
  try {
    const terms = Number(process.env.BENCH_LOINC_TERMS ?? RELEASE_SIZE.terms);
    const scale = terms / RELEASE_SIZE.terms;
    const size: LoincLikeSize = { ...RELEASE_SIZE, terms, parts: Math.round(RELEASE_SIZE.parts * scale), answerLists: Math.round(RELEASE_SIZE.answerLists * scale) };
    let started = Date.now();
    const release = writeLoincLike(dir, size, '2.99');
    const generated = (Date.now() - started) / 1000;
    started = Date.now();
    const child = spawn(process.execPath, [join(projectRoot, 'dist/lattice.js'), 'import', '--format', 'loinc', release], {
      env: { ...process.env, LATTICE_DATA_DIR: join(dir, 'data'), LOG_LEVEL: 'warn', LATTICE_ADMIN_PASSWORD: 'bench-password-123' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let peak = 0;
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += String(c)));
    child.stderr.on('data', (c: Buffer) => (out += String(c)));
    const timer = setInterval(() => {
      try {
        const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
        if (m) peak = Math.max(peak, Number(m[1]) * 1024);
      } catch {
        // the process has ended
      }
    }, 200);
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    clearInterval(timer);
    const seconds = (Date.now() - started) / 1000;
    if (code !== 0) throw new Error(`the import failed (${code}):\n${out.slice(-2000)}`);
    const concepts = /ValueSets, (\d+) concepts/.exec(out)?.[1] ?? '?';
    return [
      `### LOINC import (PGlite)`,
      '',
      `| release | codes | import | peak RSS |`,
      `|---|---|---|---|`,
      `| ${size.terms.toLocaleString('en')} terms, ${size.parts.toLocaleString('en')} parts, ${(size.terms * 6).toLocaleString('en')} part links, ${(size.terms * size.languages).toLocaleString('en')} variant rows (generated in ${generated.toFixed(0)} s) | ${Number(concepts).toLocaleString('en')} | ${seconds.toFixed(1)} s | ${(peak / 2 ** 30).toFixed(2)} GiB |`,
    ].join('\n');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
