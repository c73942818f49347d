#!/usr/bin/env node
/**
 * The `lattice` command (dist/lattice.js, the package's `bin`): a small file that loads the
 * server's bundle (dist/lattice-server.js, src/main.ts), after doing what must not wait for it
 * (docs/errors.md#start-up):
 * - `lattice serve` on a data folder: the embedded database's thread is started first, so PGlite
 *   opens on one core while the ~7 MB bundle is compiled and run on the other
 *   (storage/pglite-early.ts; the server uses it only if its configuration names that folder);
 * - `lattice serve` on PostgreSQL with several workers: this process is their primary, which only
 *   forks and watches them (src/cluster) — it never loads the server; each worker does.
 * Any error is left to the server to report: a configuration it cannot read here is read again there.
 */
import cluster from 'node:cluster';
import { setFlagsFromString } from 'node:v8';
import { isMainThread } from 'node:worker_threads';
import { servePrimary } from './cluster/primary.js';
import { loadConfig, type Config } from './config.js';
import { startEarlyPglite } from './storage/pglite-early.js';

/** Set by the bundler to the server bundle's file name; from tsc's output the server is main.js beside this file. */
declare const LATTICE_SERVER_MODULE: string | undefined;

/** V8's budget before a WebAssembly function is optimised (its default 1,800,000; measured: docs/benchmarks.md). */
const WASM_TIERING_BUDGET = 20_000_000;

async function launch(): Promise<void> {
  const argv = process.argv.slice(2);
  const serving = isMainThread && (argv.length === 0 || (argv.length === 1 && argv[0] === 'serve'));
  if (serving && cluster.isPrimary) {
    let config: Config | undefined;
    try {
      config = loadConfig();
    } catch {
      config = undefined; // the server reports it
    }
    if (config?.databaseUrl !== undefined) {
      const primary = await servePrimary({ workers: config.workers, postgres: true, logLevel: config.logLevel });
      if (primary !== undefined) {
        process.exitCode = primary;
        return;
      }
    } else if (config && !config.dataDir.startsWith('memory://') && config.workers <= 1) {
      // PGlite's WebAssembly tiers up to optimised code later than V8's default: right after it
      // opened, its thread otherwise stalls ~0.2 s while the hot functions are recompiled, and
      // the start's first statements wait for it (docs/benchmarks.md#restart-on-pglite-the-database-thread-stalled-after-it-opened-and-a-later-wasm-tier-up-2026-11-29-session-15-issue-39-item-4).
      // Process-wide, before any WebAssembly is compiled; only PGlite runs WebAssembly here.
      setFlagsFromString(`--wasm-tiering-budget=${WASM_TIERING_BUDGET}`);
      startEarlyPglite(config.dataDir, import.meta.resolve('@electric-sql/pglite'));
    }
  }
  await import(new URL(typeof LATTICE_SERVER_MODULE === 'string' ? LATTICE_SERVER_MODULE : './main.js', import.meta.url).href);
}

await launch();
