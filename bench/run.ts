import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { benchRest } from './rest.js';
import { benchStart } from './start.js';

/**
 * `npm run bench`: every benchmark (start time, REST load, terminology), results as Markdown
 * tables with ratios measured in this run. BENCH_SECONDS sets the duration of each load case
 * (default 5). `npm run bench -- start` runs only the start-time benchmark.
 */
async function main(): Promise<void> {
  const seconds = Number(process.env.BENCH_SECONDS ?? 5);
  console.log(await benchStart());
  if (process.argv[2] === 'start') return;
  console.log(await benchRest(seconds));
  // Terminology benchmark (bench/terminology.ts), when present.
  const terminology = new URL('./terminology.js', import.meta.url);
  if (existsSync(fileURLToPath(terminology))) {
    const mod = (await import(terminology.href)) as { benchTerminology?: (s: number) => Promise<string> };
    if (mod.benchTerminology) console.log(await mod.benchTerminology(seconds));
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
