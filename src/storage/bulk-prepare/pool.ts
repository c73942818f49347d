import { Worker } from 'node:worker_threads';
import type { Prepared, PrepareInput } from './prepare.js';
import { PREPARE_WORKER, type PrepareWorkerData } from './worker.js';

interface Job {
  resolve: (prepared: Prepared) => void;
  reject: (err: Error) => void;
}

interface Thread {
  worker: Worker;
  /** Jobs sent and not answered, in order (a thread answers in order). */
  jobs: Job[];
}

/**
 * Worker threads that prepare a bulk load's batches (prepare.ts): a batch goes to the thread with
 * the fewest batches waiting; each answers its batches in order. The pool holds no queue of its own:
 * the load sends a batch only when one of its slots is free (bulk-load.ts), so what waits here is
 * bounded by the load's pipeline.
 *
 * The threads run `entry` — the program's own entry module (src/main.ts, its tsc output or the
 * one-file bundle), which hands over to the worker's loop (worker.ts) when it sees its
 * `workerData` — so the same code runs from TypeScript, from tsc's output and from the bundle.
 */
export class PreparePool {
  private readonly threads: Thread[];
  private failed: Error | undefined;

  constructor(entry: URL | string, size: number, data: Omit<PrepareWorkerData, typeof PREPARE_WORKER>) {
    this.threads = Array.from({ length: Math.max(1, size) }, () => {
      const workerData: PrepareWorkerData = { ...data, [PREPARE_WORKER]: true };
      const worker = String(entry).endsWith('.ts')
        ? // Under tsx (a TypeScript entry): the thread registers tsx's loader before importing it (a thread's own `--import` comes too late for its entry).
          new Worker(`import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((tsx) => tsx.register()).then(() => import(${JSON.stringify(String(entry))}))`, { eval: true, workerData })
        : new Worker(entry, { workerData });
      const thread: Thread = { worker, jobs: [] };
      worker.on('message', (msg: Prepared & { error?: string }) => {
        const job = thread.jobs.shift();
        if (thread.jobs.length === 0) worker.unref();
        if (!job) return;
        if (msg.error !== undefined) job.reject(new Error(`bulk load worker: ${msg.error}`));
        else job.resolve(msg);
      });
      const fail = (err: Error) => {
        this.failed ??= err;
        for (const job of thread.jobs.splice(0)) job.reject(err);
      };
      worker.on('error', fail);
      worker.on('exit', (code) => fail(new Error(`a bulk load worker thread ended (exit code ${code})`)));
      worker.unref();
      return thread;
    });
  }

  get size(): number {
    return this.threads.length;
  }

  /** Prepares one batch in a worker thread. */
  run(input: PrepareInput): Promise<Prepared> {
    if (this.failed) return Promise.reject(this.failed);
    const thread = this.threads.reduce((a, b) => (b.jobs.length < a.jobs.length ? b : a));
    return new Promise<Prepared>((resolve, reject) => {
      thread.jobs.push({ resolve, reject });
      // An idle thread does not keep the process alive; one with a batch does.
      thread.worker.ref();
      thread.worker.postMessage(input);
    });
  }

  /** Ends the threads (jobs still waiting are refused). */
  async close(): Promise<void> {
    this.failed ??= new Error('the bulk load worker pool is closed');
    await Promise.all(this.threads.map((t) => t.worker.terminate()));
  }
}
