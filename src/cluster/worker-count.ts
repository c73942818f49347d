import { availableParallelism } from 'node:os';

/** `LATTICE_WORKERS` asks for more than one process where only one may run (docs/deployment.md#workers). */
export class WorkersRefused extends Error {}

/**
 * How many server processes `lattice serve` runs (docs/deployment.md#workers): `asked`
 * (`LATTICE_WORKERS`; 0 = unset), else on PostgreSQL one per core and on PGlite one — the
 * embedded database is one data folder that one process opens, so more is refused.
 */
export function workerCount(asked: number, postgres: boolean, cores: number = availableParallelism()): number {
  if (asked === 0) return postgres ? Math.max(1, cores) : 1;
  if (asked > 1 && !postgres) {
    throw new WorkersRefused(
      `LATTICE_WORKERS=${asked} needs PostgreSQL (DATABASE_URL): the embedded database (PGlite, LATTICE_DATA_DIR) is one data folder ` +
        'that one process opens. Unset LATTICE_WORKERS or set it to 1, or set DATABASE_URL (docs/deployment.md#workers).',
    );
  }
  return asked;
}
