import cluster from 'node:cluster';
import { superviseWorkers } from './supervisor.js';
import { workerCount } from './worker-count.js';

/**
 * `lattice serve` in the primary process: when it is to run several workers
 * (`worker-count.ts`), forks and watches them (`supervisor.ts`) and resolves with the primary's
 * exit code; otherwise (one process serves, or this process is a worker) resolves undefined and
 * the caller serves. The logger is loaded only for a primary: it never serves.
 */
export async function servePrimary(options: { workers: number; postgres: boolean; logLevel: string }): Promise<number | undefined> {
  if (!cluster.isPrimary) return undefined;
  const count = workerCount(options.workers, options.postgres);
  if (count <= 1) return undefined;
  const { default: pino } = await import('pino');
  return superviseWorkers(count, pino({ level: options.logLevel }));
}
