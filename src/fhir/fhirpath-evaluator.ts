import { Worker } from 'node:worker_threads';
import { fhirpathThreadSource, type FhirPathThreadData, type ThreadNode } from './fhirpath-thread.js';

export type { ThreadNode };

/** The evaluation ran past its time limit and was stopped. */
export class EvaluationTimeout extends Error {}
/** The evaluation waited {@link WAIT_FACTOR} times the time limit behind others and was not started. */
export class EvaluatorBusy extends Error {}

/** An evaluation waits at most this many times the time limit for its turn (it can be behind one stopped evaluation and more). */
export const WAIT_FACTOR = 3;

/** What the thread answers: where the results are, what they are, or why there are none. */
type Answer = { nodes: ThreadNode[] } | { values: unknown[] } | { error: string };

interface Job {
  message: Record<string, unknown>;
  queuedAt: number;
  resolve: (answer: Answer) => void;
  reject: (err: Error) => void;
}

/**
 * FHIRPath expressions written by callers, evaluated off the HTTP thread with a time limit
 * (docs/errors.md#fhirpath-evaluation). One thread, one evaluation at a time: an evaluation past
 * `timeoutMs` ends the thread (the engine cannot be interrupted otherwise) and a new one starts
 * for the next; one that waited {@link WAIT_FACTOR} × `timeoutMs` for its turn is not started. Everything else the
 * server does goes on meanwhile. An idle thread does not keep the process alive.
 */
export class FhirPathEvaluator {
  private worker: Worker | undefined;
  private ready: Promise<void> | undefined;
  private readonly queue: Job[] = [];
  private running: { id: number; job: Job; timer?: NodeJS.Timeout } | undefined;
  private nextId = 1;
  private closed = false;

  constructor(readonly timeoutMs: number) {}

  /**
   * The results of `expression` on `resource`: elements as their location in `resource`,
   * computed values as values; `{ error }` when the expression is not valid FHIRPath. Rejects
   * with {@link EvaluationTimeout} or {@link EvaluatorBusy} past the time limit.
   */
  evaluate(resource: unknown, expression: string): Promise<{ nodes: ThreadNode[] } | { error: string }> {
    return this.submit({ resource, expression }) as Promise<{ nodes: ThreadNode[] } | { error: string }>;
  }

  /**
   * The results of `expression` on `value` as JSON values (an invariant: `base` is the element's
   * path for the model's types, `vars` FHIRPath's `%resource`/`%rootResource`); `{ error }` when
   * it is not valid FHIRPath or fails. Rejects like {@link evaluate} past the time limit.
   */
  evaluateValues(value: unknown, expression: string, options: { base?: string; vars?: Record<string, unknown> } = {}): Promise<{ values: unknown[] } | { error: string }> {
    return this.submit({ resource: value, expression, values: true, ...options }) as Promise<{ values: unknown[] } | { error: string }>;
  }

  private submit(message: Record<string, unknown>): Promise<Answer> {
    if (this.closed) return Promise.reject(new Error('the FHIRPath evaluator is closed'));
    return new Promise((resolve, reject) => {
      this.queue.push({ message, queuedAt: Date.now(), resolve, reject });
      void this.pump();
    });
  }

  /** Ends the thread; pending evaluations are rejected. */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = undefined;
    this.ready = undefined;
    for (const job of this.queue.splice(0)) job.reject(new Error('the FHIRPath evaluator is closed'));
    if (this.running) {
      clearTimeout(this.running.timer);
      this.running.job.reject(new Error('the FHIRPath evaluator is closed'));
      this.running = undefined;
    }
    await worker?.terminate().catch(() => undefined);
  }

  private async pump(): Promise<void> {
    if (this.running || this.closed) return;
    const job = this.queue.shift();
    if (!job) {
      this.worker?.unref();
      return;
    }
    const id = this.nextId++;
    this.running = { id, job };
    try {
      await this.start();
    } catch (err) {
      this.running = undefined;
      job.reject(err instanceof Error ? err : new Error(String(err)));
      void this.pump();
      return;
    }
    if (this.running?.id !== id) return; // closed while starting
    if (Date.now() - job.queuedAt > WAIT_FACTOR * this.timeoutMs) {
      this.running = undefined;
      job.reject(new EvaluatorBusy(`waited ${WAIT_FACTOR * this.timeoutMs} ms for its turn`));
      void this.pump();
      return;
    }
    const worker = this.worker as Worker;
    this.running.timer = setTimeout(() => {
      if (this.running?.id !== id) return;
      this.running = undefined;
      // Stop it: the thread is ended; the next evaluation starts a new one.
      this.worker = undefined;
      this.ready = undefined;
      void worker.terminate().catch(() => undefined);
      job.reject(new EvaluationTimeout(`stopped after ${this.timeoutMs} ms`));
      void this.pump();
    }, this.timeoutMs);
    worker.ref();
    try {
      worker.postMessage({ id, ...job.message });
    } catch (err) {
      // A value that cannot be cloned (not JSON): answered as an error of this evaluation.
      clearTimeout(this.running.timer);
      this.running = undefined;
      job.resolve({ error: err instanceof Error ? err.message : String(err) });
      void this.pump();
    }
  }

  private start(): Promise<void> {
    if (this.ready) return this.ready;
    const data: FhirPathThreadData = { fhirpathUrl: import.meta.resolve('fhirpath'), modelUrl: import.meta.resolve('fhirpath/fhir-context/r4') };
    const worker = new Worker(fhirpathThreadSource, { eval: true, workerData: data });
    this.worker = worker;
    this.ready = new Promise<void>((resolve, reject) => {
      worker.once('exit', (code) => reject(new Error(`the FHIRPath evaluation thread ended while starting (exit code ${code})`)));
      worker.on('message', (msg: { ready?: boolean; id?: number; nodes?: ThreadNode[]; values?: unknown[]; error?: string }) => {
        if (msg.ready) {
          resolve();
          return;
        }
        const running = this.running;
        if (!running || running.id !== msg.id) return;
        clearTimeout(running.timer);
        this.running = undefined;
        running.job.resolve(msg.error !== undefined ? { error: msg.error } : msg.values !== undefined ? { values: msg.values } : { nodes: msg.nodes ?? [] });
        void this.pump();
      });
    });
    worker.on('error', () => undefined); // followed by 'exit'
    worker.on('exit', () => {
      if (this.worker !== worker) return; // ended on purpose
      this.worker = undefined;
      this.ready = undefined;
      const running = this.running;
      if (running) {
        clearTimeout(running.timer);
        this.running = undefined;
        running.job.reject(new Error('the FHIRPath evaluation thread ended'));
        void this.pump();
      }
    });
    this.ready.catch(() => undefined);
    return this.ready;
  }
}
