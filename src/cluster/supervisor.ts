import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';

/** The environment variable naming a worker's slot (1…N) to the process it runs in. */
export const WORKER_SLOT = 'LATTICE_WORKER_SLOT';

/** A worker slot that died this often within a minute is restarted after a growing delay. */
const RESTART_WINDOW_MS = 60_000;
/** The longest delay before a worker is restarted. */
const MAX_RESTART_DELAY_MS = 30_000;

/** The slot (1…N) of this worker process, or 1 when the process is no worker (one process serves). */
export function workerSlot(): number {
  return cluster.isWorker ? Number(process.env[WORKER_SLOT]) || 1 : 1;
}

/**
 * Delay before a slot's worker is restarted, given how many times it died within the last
 * minute: at once after one death, then 1 s, 2 s, 4 s … up to 30 s — a worker that keeps
 * dying is not restarted in a tight loop.
 */
export function restartDelay(recentDeaths: number): number {
  return recentDeaths <= 1 ? 0 : Math.min(MAX_RESTART_DELAY_MS, 1000 * 2 ** (recentDeaths - 2));
}

/**
 * The primary of `lattice serve` with several workers (docs/deployment.md#workers): forks
 * `count` workers that share the listening socket (node:cluster; each accepts connections itself), restarts a worker that dies
 * (logged, at a bounded rate), gives up when workers keep dying before they listen (every slot
 * twice in a row, at least 3 deaths: a configuration or database that does not let a worker
 * start), and on SIGTERM/SIGINT lets every worker finish its in-flight requests. Resolves with
 * the exit code of the primary: 0 after a requested stop, 1 after giving up.
 */
export function superviseWorkers(count: number, log: Logger): Promise<number> {
  const giveUpAfter = Math.max(3, 2 * count);
  const slots = new Map<Worker, number>();
  const listening = new Set<Worker>();
  const deaths = new Map<number, number[]>();
  const timers = new Set<NodeJS.Timeout>();
  let startFailures = 0;
  let stopping: number | undefined; // the exit code once stopping
  let finish: (code: number) => void = () => undefined;
  const done = new Promise<number>((resolve) => (finish = resolve));

  const fork = (slot: number) => {
    const worker = cluster.fork({ [WORKER_SLOT]: String(slot) });
    slots.set(worker, slot);
    worker.on('listening', () => {
      listening.add(worker);
      startFailures = 0;
    });
  };
  const stop = (code: number, why: string) => {
    if (stopping !== undefined) return;
    stopping = code;
    for (const timer of timers) clearTimeout(timer);
    timers.clear();
    log.info({ workers: slots.size, reason: why }, 'stopping workers: each finishes its in-flight requests');
    for (const worker of slots.keys()) worker.process.kill('SIGTERM');
    if (slots.size === 0) finish(code);
  };

  cluster.on('exit', (worker, code, signal) => {
    const slot = slots.get(worker);
    if (slot === undefined) return;
    slots.delete(worker);
    const started = listening.delete(worker);
    if (stopping !== undefined) {
      if (slots.size === 0) finish(stopping);
      return;
    }
    const now = Date.now();
    const recent = [...(deaths.get(slot) ?? []), now].filter((t) => now - t < RESTART_WINDOW_MS);
    deaths.set(slot, recent);
    const delay = restartDelay(recent.length);
    const details = { worker: slot, pid: worker.process.pid, code, signal, restartInMs: delay };
    if (!started && ++startFailures >= giveUpAfter) {
      log.fatal({ ...details, startFailures }, `workers keep dying at start (${startFailures} in a row): stopping`);
      stop(1, 'workers keep dying at start');
      return;
    }
    log.error(details, started ? 'worker died: restarting it' : 'worker died at start: restarting it');
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (stopping === undefined) fork(slot);
    }, delay);
    timers.add(timer);
  });

  // Each worker accepts from the shared socket itself (not handed over by the primary, the
  // default elsewhere than Windows): a connection is never handed to a worker that just died, and
  // the primary does no work per connection.
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => stop(0, signal));
  log.info({ workers: count, pid: process.pid }, 'Lattice starting workers');
  for (let slot = 1; slot <= count; slot++) fork(slot);
  return done;
}
