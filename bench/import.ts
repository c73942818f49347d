import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadPopulation } from './population.js';
import { writeSyntheaNdjson } from './synthea-like.js';

/**
 * `npm run bench -- import [--driver=…] [--import-size=N]`: only the NDJSON import of the REST
 * bench (bench/rest.ts: the same generated Synthea-shaped population, `lattice import` as its
 * own process into a project), per driver: resources/s and the import process's peak RSS.
 */
export async function benchImport(options: { drivers: Array<'pglite' | 'pg'>; importSize: number }): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-bench-import-'));
  try {
    const file = join(dir, 'population.ndjson');
    const generated = await writeSyntheaNdjson(file, options.importSize, { patients: 0, encounters: 10, observations: 5 });
    const rows: string[] = [];
    for (const driver of options.drivers) {
      const population = await loadPopulation(driver, file, dir, generated, { serve: false });
      await population.stop();
      const { seconds, peakRss } = population.imported;
      rows.push(`| ${driver} | ${(generated / seconds).toFixed(0)} | ${seconds.toFixed(1)} s (process start included) | ${(peakRss / 2 ** 20).toFixed(0)} MiB |`);
    }
    return (
      `## NDJSON import of ${generated.toLocaleString('en')} generated resources\n\n` +
      '| driver | resources/s | wall time | peak RSS |\n|---|---|---|---|\n' +
      rows.join('\n') +
      '\n'
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
