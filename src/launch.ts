/**
 * The `lattice` command (dist/lattice.js, the package's `bin`): a small file that loads the
 * server's bundle (dist/lattice-server.js, src/main.ts) — after starting the embedded database's
 * thread when the command is `lattice serve` on a data folder, so PGlite opens on one core while
 * the ~7 MB bundle is compiled and run on the other (docs/errors.md#start-up). Every decision
 * here is repeated by the server with its full configuration: the thread is used only if the
 * server asks for the same folder (storage/pglite-early.ts), and any error is the server's to report.
 */
import { isMainThread } from 'node:worker_threads';
import { startEarlyPglite } from './storage/pglite-early.js';

/** Set by the bundler to the server bundle's file name; from tsc's output the server is main.js beside this file. */
declare const LATTICE_SERVER_MODULE: string | undefined;

const argv = process.argv.slice(2);
const env = process.env;
const dataDir = env.LATTICE_DATA_DIR || './data';
const serving = argv.length === 0 || (argv.length === 1 && argv[0] === 'serve');
if (isMainThread && serving && !env.DATABASE_URL && !dataDir.startsWith('memory://') && (env.LATTICE_WORKERS ?? '1') === '1') {
  startEarlyPglite(dataDir, import.meta.resolve('@electric-sql/pglite'));
}
await import(new URL(typeof LATTICE_SERVER_MODULE === 'string' ? LATTICE_SERVER_MODULE : './main.js', import.meta.url).href);
