import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadPopulation } from './population.js';
import { procStatus, type BenchProcess } from './server-process.js';
import { writeSyntheaNdjson } from './synthea-like.js';

/** What one system-level export of a population measured. */
export interface ExportResult {
  resources: number;
  /** From the kick-off to the manifest (the job). */
  jobSeconds: number;
  /** Downloading every file. */
  downloadSeconds: number;
  bytes: number;
  /** The server's peak RSS (VmHWM) after the export: its start, the job and the downloads. */
  peakRss: number;
}

/**
 * A system-level `$export` of everything in the caller's project (docs/export.md) on a running
 * server: kick-off, polling every 200 ms, then every file downloaded and counted line by line
 * (streamed; the client holds no file). Fails unless the files hold what the manifest counts,
 * and at least the `expected` imported resources (the project also holds its admin's profile).
 */
export async function measureExport(server: BenchProcess, token: string, expected: number): Promise<ExportResult> {
  const auth = { authorization: `Bearer ${token}` };
  const started = performance.now();
  const kick = await fetch(`${server.url}/fhir/R4/$export`, { headers: { ...auth, prefer: 'respond-async' } });
  const status = kick.headers.get('content-location');
  if (kick.status !== 202 || !status) throw new Error(`$export kick-off: ${kick.status} ${(await kick.text()).slice(0, 300)}`);
  // The public URL of the bench's servers is a fixed name (BENCH_ADMIN_ENV): ask this server.
  const here = (url: string) => server.url + new URL(url).pathname;
  let manifest: { output: Array<{ url: string; count: number }> } | undefined;
  while (!manifest) {
    const res = await fetch(here(status), { headers: auth });
    if (res.status === 200) manifest = (await res.json()) as typeof manifest;
    else if (res.status === 202) await sleep(200);
    else throw new Error(`$export status: ${res.status} ${(await res.text()).slice(0, 300)}`);
  }
  const jobSeconds = (performance.now() - started) / 1000;
  const downloading = performance.now();
  let bytes = 0;
  let lines = 0;
  for (const file of manifest.output) {
    const res = await fetch(here(file.url), { headers: auth });
    if (!res.ok || !res.body) throw new Error(`download ${file.url}: ${res.status}`);
    for await (const chunk of res.body) {
      bytes += chunk.byteLength;
      for (const byte of chunk) if (byte === 10) lines++;
    }
  }
  const downloadSeconds = (performance.now() - downloading) / 1000;
  const counted = manifest.output.reduce((sum, file) => sum + file.count, 0);
  if (lines !== counted || lines < expected) throw new Error(`the export holds ${lines} resources (manifest: ${counted}); ${expected} were imported`);
  return { resources: lines, jobSeconds, downloadSeconds, bytes, peakRss: procStatus(server.pid, 'VmHWM') };
}

/** The row of the REST benchmark's bulk table. */
export function exportRow(result: ExportResult): string {
  return (
    `| \`$export\` (system level) to NDJSON | ${(result.resources / result.jobSeconds).toFixed(0)} | ${result.resources.toLocaleString('en')} resources in ${result.jobSeconds.toFixed(1)} s; ` +
    `download ${(result.bytes / 2 ** 20).toFixed(0)} MiB in ${result.downloadSeconds.toFixed(1)} s; server peak RSS ${(result.peakRss / 2 ** 20).toFixed(0)} MiB |`
  );
}

/**
 * `npm run bench -- export [--import-size=N]`: only the export, on a generated population of
 * `importSize` resources (default 200,000) loaded with `lattice import`, per driver.
 */
export async function benchExport(options: { drivers: Array<'pglite' | 'pg'>; importSize: number }): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-bench-export-'));
  try {
    const file = join(dir, 'population.ndjson');
    const generated = await writeSyntheaNdjson(file, options.importSize);
    const rows: string[] = [];
    for (const driver of options.drivers) {
      const population = await loadPopulation(driver, file, dir, generated);
      try {
        rows.push(exportRow(await measureExport(population.server, population.token, generated)).replace(/^\| /, `| ${driver}: `));
      } finally {
        await population.stop();
      }
    }
    return `## Bulk Data export (${generated.toLocaleString('en')} generated resources)\n\n| bulk | resources/s | notes |\n|---|---|---|\n${rows.join('\n')}\n`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
