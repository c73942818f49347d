import { benchExport } from './export.js';
import { benchImport } from './import.js';
import { benchLoinc } from './loinc.js';
import { benchWrites } from './writes.js';
import { benchRest } from './rest.js';
import { benchStart } from './start.js';
import { benchTerminology } from './terminology.js';
import { benchScale } from './terminology-scale.js';
import { benchSnomed } from './snomed.js';

/**
 * `npm run bench [-- --quick] [-- --driver=pglite|pg] [-- --all]`: start time (bench/start.ts),
 * the terminology-at-scale table (bench/terminology-scale.ts: 350,000 concepts, both
 * drivers, 32 connections) and the REST table (bench/rest.ts: an NDJSON import of
 * `--import-size=N` (or BENCH_IMPORT_SIZE) generated resources, default 1,000,000, then reads, searches, writes and
 * transactions on that data), as Markdown with ratios measured in this run.
 * `npm run bench -- rest` runs only the REST table. `--quick` uses 40,000
 * concepts and 3 s per case; `--all` adds the older REST and sequential-latency benchmarks.
 * `npm run bench -- start` runs only the start-time benchmark, `npm run bench -- scale` only the
 * terminology-at-scale table; `npm run bench -- snomed` only
 * the SNOMED CT one (bench/snomed.ts: RF2 import and ECL at International size), `npm run bench --
 * loinc` only the LOINC import (bench/loinc.ts), `npm run bench -- export` only the Bulk Data export
 * (bench/export.ts, 200,000 resources unless `--import-size`), `npm run bench -- import` only the
 * REST bench's NDJSON import (bench/import.ts, 200,000 unless `--import-size`). BENCH_SECONDS sets the duration of each load
 * case (default 10), BENCH_SIZE the number of concepts.
 */
async function main(argv: string[]): Promise<void> {
  if (argv[0] === 'loinc') {
    console.log(await benchLoinc());
    return;
  }
  if (argv[0] === 'snomed') {
    // SNOMED CT from RF2 at International size (bench/snomed.ts).
    console.log(await benchSnomed(Number(process.env.BENCH_SIZE ?? 370_000)));
    return;
  }
  const quick = argv.includes('--quick');
  const driver = argv.find((a) => a.startsWith('--driver='))?.slice('--driver='.length);
  const seconds = Number(process.env.BENCH_SECONDS ?? (quick ? 3 : 10));
  const size = Number(process.env.BENCH_SIZE ?? (quick ? 40_000 : 350_000));
  const drivers: Array<'pglite' | 'pg'> = driver === 'pglite' || driver === 'pg' ? [driver] : ['pglite', 'pg'];
  const sizeArg = argv.find((a) => a.startsWith('--import-size='))?.slice('--import-size='.length);
  const importSize = Number(sizeArg ?? process.env.BENCH_IMPORT_SIZE ?? (quick ? 20_000 : 1_000_000));
  const rest = () => benchRest({ seconds, connections: 32, drivers, importSize });
  if (argv[0] === 'rest') {
    console.log(await rest());
    return;
  }
  if (argv[0] === 'writes') {
    // Creates and Synthea-shaped transactions with conditional references (bench/writes.ts); --workers=1,2 on PostgreSQL.
    const workers = (argv.find((a) => a.startsWith('--workers='))?.slice('--workers='.length) ?? '1').split(',').map(Number);
    const sizes = (argv.find((a) => a.startsWith('--sizes='))?.slice('--sizes='.length) ?? '100,1000,3000').split(',').map(Number);
    console.log(await benchWrites({ seconds, connections: 32, drivers, workers, sizes, inFlight: Number(process.env.BENCH_IN_FLIGHT ?? 1) }));
    return;
  }
  if (argv[0] === 'import') {
    // Only the REST bench's NDJSON import (bench/import.ts), on 200,000 resources unless --import-size says otherwise.
    console.log(await benchImport({ drivers, importSize: Number(sizeArg ?? process.env.BENCH_IMPORT_SIZE ?? 200_000) }));
    return;
  }
  if (argv[0] === 'export') {
    // Only the Bulk Data export (bench/export.ts), on 200,000 resources unless --import-size says otherwise.
    console.log(await benchExport({ drivers, importSize: Number(sizeArg ?? process.env.BENCH_IMPORT_SIZE ?? 200_000) }));
    return;
  }
  if (argv[0] === 'scale') {
    // Only the terminology-at-scale table (bench/terminology-scale.ts): a CodeSystem resource of BENCH_SIZE concepts.
    console.log(await benchScale({ size, seconds, connections: 32, drivers, samples: quick ? 50 : 200 }));
    return;
  }
  console.log(await benchStart());
  if (argv[0] === 'start') return;
  console.log(await benchScale({ size, seconds, connections: 32, drivers, samples: quick ? 50 : 200 }));
  console.log(await rest());
  if (argv.includes('--all')) {
    console.log(await benchTerminology(seconds));
  }
}

main(process.argv.slice(2)).then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
