/**
 * The code of the embedded database's own thread (docs/errors.md#embedded-database-thread).
 *
 * It runs in a worker thread started from its source text (`pgliteThreadSource`), so the same
 * code starts from TypeScript under tsx, from tsc's output and from the one-file bundle, without a
 * second entry file. That is why the function imports what it needs itself and refers to
 * nothing outside its own body: only types are imported at the top of this module.
 *
 * Protocol (one message in, one answer out, answered in order; the HTTP thread's turn lock lets
 * only one request's statements be in flight):
 * - in: `{ id, op: 'query', sql, params, copy? }` — `copy` is the text of a `COPY … FROM
 *   '/dev/blob'`; `{ id, op: 'listen', channel }`; `{ id, op: 'dump' }`; `{ id, op: 'close' }`
 * - out: `{ id, rows, affectedRows }` or `{ id, error }`; `{ notify, payload }` for LISTEN;
 *   `{ ready: true }` once open, or `{ openError }` when the folder cannot be opened.
 */
import type { PGlite } from '@electric-sql/pglite';

/** What the thread is started with (`workerData`). */
export interface PgliteThreadData {
  /** `import()`-able URL of PGlite's module, resolved by the HTTP thread. */
  pgliteUrl: string;
  /** A data folder, or undefined for an in-memory database. */
  dataDir: string | undefined;
  /** Start parameters added to PGlite's own (`PGlite.defaultStartParams`). */
  startParams: string[];
  /** A dumped data folder to start from (test templates). */
  loadDataDir?: ArrayBuffer;
}

/** An error as it crosses the thread boundary: its message and PostgreSQL's fields (code, detail, …). */
export type ThreadError = Record<string, unknown> & { message: string };

export async function pgliteThread(): Promise<void> {
  const threads = await import('node:worker_threads');
  const port = threads.parentPort as NonNullable<typeof threads.parentPort>;
  const data = threads.workerData as PgliteThreadData;
  const flatten = (err: unknown): ThreadError => {
    const out: ThreadError = { message: err instanceof Error ? err.message : String(err) };
    if (err && typeof err === 'object') {
      for (const [key, value] of Object.entries(err)) {
        if (['string', 'number', 'boolean'].includes(typeof value)) out[key] = value;
      }
    }
    return out;
  };
  let pg: PGlite;
  try {
    const { PGlite: PGliteClass } = (await import(data.pgliteUrl)) as typeof import('@electric-sql/pglite');
    pg = await PGliteClass.create(data.dataDir, {
      startParams: [...PGliteClass.defaultStartParams, ...data.startParams],
      ...(data.loadDataDir ? { loadDataDir: new Blob([data.loadDataDir]) } : {}),
    });
  } catch (err) {
    port.postMessage({ openError: flatten(err) });
    return;
  }
  port.on('message', (msg: { id: number; op: string; sql?: string; params?: unknown[]; copy?: string; channel?: string }) => {
    void (async () => {
      try {
        switch (msg.op) {
          case 'query': {
            const res =
              msg.copy === undefined
                ? await pg.query(msg.sql as string, msg.params ?? [])
                : await pg.query(msg.sql as string, [], { blob: new Blob([msg.copy]) });
            port.postMessage({ id: msg.id, rows: res.rows, affectedRows: res.affectedRows });
            break;
          }
          case 'listen': {
            const channel = msg.channel as string;
            await pg.listen(channel, (payload) => port.postMessage({ notify: channel, payload }));
            port.postMessage({ id: msg.id, rows: [] });
            break;
          }
          case 'dump': {
            const buffer = await (await pg.dumpDataDir('none')).arrayBuffer();
            port.postMessage({ id: msg.id, rows: [], dump: buffer }, [buffer]);
            break;
          }
          case 'close':
            await pg.close();
            port.postMessage({ id: msg.id, rows: [] });
            port.close();
            break;
          default:
            port.postMessage({ id: msg.id, error: { message: `unknown operation ${msg.op}` } });
        }
      } catch (err) {
        port.postMessage({ id: msg.id, error: flatten(err) });
      }
    })();
  });
  port.postMessage({ ready: true });
}

/**
 * The thread's program: the function above as source text (a worker started with `eval`).
 * `__name` is the helper esbuild (under tsx) inserts to keep function names: defined here as
 * a no-op, since the function's text is evaluated away from the module that had it.
 */
export const pgliteThreadSource = `var __name = (fn) => fn; (${pgliteThread.toString()})().catch((err) => { console.error(err); process.exit(70); });`;
