import { Worker } from 'node:worker_threads';
import type { QueryResult } from '../core/database.js';
import { databaseBusy, databaseUnavailable } from './database-errors.js';
import type { EarlyThread } from './pglite-early.js';
import { pgliteThreadSource, type PgliteThreadData, type ThreadError } from './pglite-thread.js';

/**
 * A statement's time limit, asked for when the statement is sent (after any wait for a replaced
 * thread): when it passes, the statement is stopped and `error()` is thrown.
 */
export type DeadlineOf = () => Deadline | undefined;

export interface Deadline {
  /** `Date.now()` time. */
  at: number;
  error: () => Error;
  /** Give the statement up without stopping it (a probe that must never cost a restart). */
  giveUp?: boolean;
}

interface Pending {
  resolve: (value: Answer) => void;
  reject: (err: Error) => void;
  /** The statement was given up (its deadline passed on a database that cannot be stopped). */
  abandoned?: boolean;
}

interface Answer {
  rows?: unknown[];
  affectedRows?: number;
  dump?: ArrayBuffer;
  error?: ThreadError;
}

export interface PgliteWorkerOptions {
  dataDir: string | undefined;
  startParams: string[];
  loadDataDir?: Blob;
  /** How long a statement waits for a replaced thread to be ready (ms; 0: as long as it takes). */
  waitMs: number;
  /** A thread already started on `dataDir` (pglite-early.ts): used for the first open instead of a new one. */
  early?: Pick<EarlyThread, 'worker' | 'ready'>;
  /** NOTIFY heard on a channel listened to; `*` after the thread was restarted (anything may have been missed). */
  onNotify: (channel: string, payload: string) => void;
}

/** PGlite's ES module URL, found from this module (the bundle leaves PGlite in node_modules). */
const pgliteUrl = (): string => import.meta.resolve('@electric-sql/pglite');

/**
 * The embedded database in its own thread, seen from the HTTP thread
 * (docs/errors.md#embedded-database-thread): statements are sent as messages and answered in
 * order, so a long statement no longer holds the event loop that answers HTTP.
 *
 * A statement past its deadline is stopped by ending the thread (PGlite cannot cancel a running
 * statement): what it had not committed is lost as in a crash, and the folder is opened again
 * in a new thread (PostgreSQL's crash recovery replays the write-ahead log), during which
 * statements wait. An in-memory database cannot be reopened: there the caller gets its error at
 * the deadline and the statement runs to its end in the thread (later statements queue behind it).
 */
export class PgliteWorker {
  /** Increases each time the thread is replaced: a transaction begun in an earlier one is gone. */
  generation = 0;
  private worker: Worker | undefined;
  private ready!: Promise<void>;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private readonly channels = new Set<string>();
  private closing = false;
  private failed: Error | undefined;
  /** When the oldest statement still running was sent (`Date.now()`), or undefined. */
  private readonly sentAt = new Map<number, number>();

  private constructor(private readonly options: PgliteWorkerOptions) {}

  static async open(options: PgliteWorkerOptions): Promise<PgliteWorker> {
    const client = new PgliteWorker(options);
    const loadDataDir = options.loadDataDir ? await options.loadDataDir.arrayBuffer() : undefined;
    client.start(loadDataDir, options.early);
    await client.ready;
    return client;
  }

  /** Whether a stuck statement can be stopped by reopening (a folder; not `memory://`). */
  get restartable(): boolean {
    return this.options.dataDir !== undefined;
  }

  /** True while the thread is being replaced, or after it failed for good. */
  get unavailable(): boolean {
    return this.replaced !== undefined || this.failed !== undefined;
  }

  /** How long the oldest statement in the thread has run (ms), or undefined. */
  busyForMs(): number | undefined {
    let oldest: number | undefined;
    for (const at of this.sentAt.values()) oldest = oldest === undefined ? at : Math.min(oldest, at);
    return oldest === undefined ? undefined : Date.now() - oldest;
  }

  /** Set while the thread is being replaced: settles when the new one is open (or failed). */
  private replaced: Promise<void> | undefined;

  private start(loadDataDir?: ArrayBuffer, early?: PgliteWorkerOptions['early']): void {
    const data: PgliteThreadData = {
      pgliteUrl: pgliteUrl(),
      dataDir: this.options.dataDir,
      startParams: this.options.startParams,
      ...(loadDataDir ? { loadDataDir } : {}),
    };
    const worker = early?.worker ?? new Worker(pgliteThreadSource, { eval: true, workerData: data, transferList: loadDataDir ? [loadDataDir] : [] });
    this.worker = worker;
    // Like the in-process database it replaces, an idle thread does not keep the process alive
    // (a command that forgets to close still exits); one with a statement in flight does.
    const idle = () => {
      if (this.pending.size === 0) worker.unref();
    };
    if (early) worker.ref(); // started unreferenced: now something waits for it
    this.ready = early ? early.ready.then(idle) : new Promise<void>((resolve, reject) => {
      const onOpen = (msg: { ready?: boolean; openError?: ThreadError }) => {
        if (msg.ready) {
          resolve();
          idle();
        } else if (msg.openError) reject(toError(msg.openError));
        else return;
        worker.off('message', onOpen);
      };
      worker.on('message', onOpen);
      worker.once('exit', (code) => reject(new Error(`the embedded database thread ended while opening (exit code ${code})`)));
    });
    this.ready.catch(() => undefined);
    worker.on('message', (msg: Answer & { id?: number; notify?: string; payload?: string }) => {
      if (msg.notify !== undefined) {
        this.options.onNotify(msg.notify, msg.payload ?? '');
        return;
      }
      if (msg.id === undefined) return;
      const pending = this.pending.get(msg.id);
      this.pending.delete(msg.id);
      this.sentAt.delete(msg.id);
      idle();
      if (!pending || pending.abandoned) return;
      pending.resolve(msg);
    });
    worker.on('error', () => undefined); // followed by 'exit'
    worker.on('exit', () => {
      if (this.worker !== worker) return; // replaced on purpose
      this.rejectAll(databaseUnavailable());
      if (!this.closing) void this.replace();
    });
  }

  /** Ends the current thread (if any still runs) and opens the database again in a new one. */
  private replace(): Promise<void> {
    if (this.replaced || this.closing) return this.replaced ?? Promise.resolve();
    this.generation++;
    this.replaced = this.reopen().finally(() => {
      this.replaced = undefined;
    });
    return this.replaced;
  }

  private async reopen(): Promise<void> {
    const old = this.worker;
    try {
      this.worker = undefined; // its 'exit' is expected now
      await old?.terminate().catch(() => undefined);
      // Whatever else was in the thread went with it (the turn lock allows one request's
      // statements; a probe or a background statement may be there too).
      this.rejectAll(databaseUnavailable());
      if (this.closing) return;
      if (!this.restartable) {
        this.failed = databaseUnavailable();
        return;
      }
      this.start();
      await this.ready;
      if (this.closing) {
        await (this.worker as Worker | undefined)?.terminate().catch(() => undefined);
        return;
      }
    } catch (err) {
      this.failed = err instanceof Error ? err : new Error(String(err));
      return;
    }
    // Open again: listen again, and tell the listeners anything may have been missed.
    this.replaced = undefined;
    for (const channel of this.channels) await this.send({ op: 'listen', channel }, undefined).catch(() => undefined);
    for (const channel of this.channels) this.options.onNotify(channel, '*');
  }

  private rejectAll(err: Error): void {
    for (const [id, pending] of this.pending) {
      this.pending.delete(id);
      this.sentAt.delete(id);
      if (!pending.abandoned) pending.reject(err);
    }
  }

  /**
   * Sends one message and waits for its answer. Past `deadline` the statement is stopped
   * (restartable) or given up (in memory), and the promise rejects with `deadline.error()`.
   */
  private async send(msg: Record<string, unknown>, deadlineOf: DeadlineOf | undefined, transfer: ArrayBuffer[] = []): Promise<Answer> {
    if (this.failed) throw databaseUnavailable();
    if (this.replaced) {
      // The thread is being replaced: wait for it as for a turn; the statement's time starts after.
      await withTimeout(this.replaced, this.options.waitMs, databaseBusy);
      if (this.failed) throw databaseUnavailable();
    }
    const deadline = deadlineOf?.();
    const id = this.nextId++;
    const worker = this.worker;
    if (!worker) throw databaseUnavailable();
    const answer = new Promise<Answer>((resolve, reject) => {
      const pending: Pending = { resolve, reject };
      this.pending.set(id, pending);
      this.sentAt.set(id, Date.now());
      if (deadline && Number.isFinite(deadline.at)) {
        const timer = setTimeout(
          () => {
            if (!this.pending.has(id)) return;
            const err = deadline.error();
            if (this.restartable && !deadline.giveUp) {
              // Stop it: end the thread, reopen the folder (everything in flight is lost with it).
              this.pending.delete(id);
              this.sentAt.delete(id);
              reject(err);
              if (this.worker === worker) void this.replace();
            } else {
              pending.abandoned = true;
              reject(err);
            }
          },
          Math.max(0, deadline.at - Date.now()),
        );
        const settle = (fn: () => void) => () => {
          clearTimeout(timer);
          fn();
        };
        pending.resolve = (value) => settle(() => resolve(value))();
        pending.reject = (e) => settle(() => reject(e))();
      }
    });
    worker.ref();
    worker.postMessage({ id, ...msg }, transfer);
    const result = await answer;
    if (result.error) throw toError(result.error);
    return result;
  }


  async query<T>(sql: string, params: unknown[], deadline?: DeadlineOf): Promise<QueryResult<T>> {
    const res = await this.send({ op: 'query', sql, params }, deadline);
    const rows = (res.rows ?? []) as T[];
    return { rows, rowCount: res.affectedRows ?? rows.length };
  }

  async copy(sql: string, text: string, deadline?: DeadlineOf): Promise<void> {
    await this.send({ op: 'query', sql, copy: text }, deadline);
  }

  async listen(channel: string): Promise<void> {
    this.channels.add(channel);
    await this.send({ op: 'listen', channel }, undefined);
  }

  async dump(): Promise<Blob> {
    const res = await this.send({ op: 'dump' }, undefined);
    return new Blob([res.dump as ArrayBuffer]);
  }

  async close(): Promise<void> {
    if (this.closing) return;
    const open = !this.unavailable;
    this.closing = true;
    try {
      if (open) await this.send({ op: 'close' }, () => ({ at: Date.now() + 10_000, error: databaseUnavailable }));
    } catch {
      // ended below whatever happened
    } finally {
      await this.worker?.terminate().catch(() => undefined);
    }
  }
}

/** An error from the thread as an Error with PostgreSQL's fields (code, detail, …) on it. */
function toError(e: ThreadError): Error {
  return Object.assign(new Error(e.message), e);
}

async function withTimeout<T>(promise: Promise<T>, waitMs: number, onTimeout: () => Error): Promise<T> {
  if (waitMs <= 0) return promise;
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => reject(onTimeout()), waitMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
