import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import { lockDataFolder } from './data-folder-lock.js';
import { pgliteThreadSource, type PgliteThreadData, type ThreadError } from './pglite-thread.js';

/**
 * The embedded database's thread started before the server's code is loaded
 * (docs/errors.md#start-up): `lattice serve` on a data folder spends ~0.3 s compiling and
 * running its one-file bundle and ~0.4 s opening PGlite, each on its own core when they overlap.
 * The command's entry (src/launch.ts) calls `startEarlyPglite` first thing; the database driver
 * later takes the thread with `takeEarlyPglite` — or, when its configuration names another folder
 * or other parameters, ends it and starts its own.
 *
 * This module is loaded by the small entry file as well as by the server's bundle: the two hand
 * the thread over through one global slot, and it imports nothing heavier than the thread's source.
 */

/**
 * PostgreSQL's start parameters for PGlite beside PGlite's own (added in its thread): a smaller
 * buffer cache — PGlite's default (initdb's 128 MB `shared_buffers`) is set up inside
 * WebAssembly memory on every open, which made opening a data folder several times slower than
 * with 32 MB; pages beyond the cache are still read through the operating system's file cache —
 * and bounds on the write-ahead log: PostgreSQL's defaults (up to 1 GB kept) suit a server; for
 * an embedded database the WAL is pure overhead on disk, and after one large import it would stay
 * at 1 GB (docs/errors.md#data-folder).
 */
export const PGLITE_START_PARAMS = ['-c', 'shared_buffers=32MB', '-c', 'max_wal_size=128MB', '-c', 'min_wal_size=32MB'];

/** A thread started early: its folder (absolute), what it was started with, and its lock on the folder. */
export interface EarlyThread {
  dataDir: string;
  startParams: string[];
  worker: Worker;
  /** Settles when the thread says it is open, or rejects with why it could not open. */
  ready: Promise<void>;
  unlock: () => void;
}

const SLOT = Symbol.for('lattice.pglite.early-thread');
type Slot = { [SLOT]?: EarlyThread };

/** PGlite's ES module URL, found from the calling module's folder (the bundles leave PGlite in node_modules). */
export type PgliteUrl = () => string;

/**
 * Locks `dataDir` and starts PGlite's thread on it, kept for `takeEarlyPglite`. Does nothing —
 * leaving every error to the driver's own open, which reports it — when the folder cannot be
 * created or is locked by another process. The thread does not keep the process alive, and the
 * lock is released at exit if the thread was never taken (a configuration error ended the start).
 */
export function startEarlyPglite(dataDir: string, pgliteUrl: string): void {
  const slot = globalThis as Slot;
  if (slot[SLOT]) return;
  const dir = resolve(dataDir);
  let unlock: () => void;
  try {
    mkdirSync(dir, { recursive: true });
    unlock = lockDataFolder(dir);
  } catch {
    return;
  }
  const data: PgliteThreadData = { pgliteUrl, dataDir: dir, startParams: PGLITE_START_PARAMS };
  const worker = new Worker(pgliteThreadSource, { eval: true, workerData: data });
  worker.unref();
  const ready = new Promise<void>((resolveReady, reject) => {
    const onOpen = (msg: { ready?: boolean; openError?: ThreadError }) => {
      if (msg.ready) resolveReady();
      else if (msg.openError) reject(Object.assign(new Error(msg.openError.message), msg.openError));
      else return;
      worker.off('message', onOpen);
    };
    worker.on('message', onOpen);
    worker.once('exit', (code) => reject(new Error(`the embedded database thread ended while opening (exit code ${code})`)));
  });
  ready.catch(() => undefined);
  const early: EarlyThread = { dataDir: dir, startParams: PGLITE_START_PARAMS, worker, ready, unlock };
  slot[SLOT] = early;
  process.once('exit', () => {
    if (slot[SLOT] === early) unlock();
  });
}

/**
 * The thread started early for `dataDir` with `startParams`, now the caller's (with the folder's
 * lock); undefined when none was started. One started for another folder or other parameters is
 * ended and its lock released, so the caller opens the folder it was configured with.
 */
export async function takeEarlyPglite(dataDir: string, startParams: string[]): Promise<EarlyThread | undefined> {
  const slot = globalThis as Slot;
  const early = slot[SLOT];
  if (!early) return undefined;
  delete slot[SLOT];
  if (early.dataDir === resolve(dataDir) && early.startParams.join('\0') === startParams.join('\0')) return early;
  await early.worker.terminate().catch(() => undefined);
  early.unlock();
  return undefined;
}
