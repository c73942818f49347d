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
  /**
   * Text and text[] parameters in PostgreSQL's binary format, built with Node's native UTF-8
   * encoder: PGlite's own serializers escape every element of an array into a text literal and
   * measure it character by character in JavaScript, which was a fifth of this thread's time in
   * a large transaction (the columns of its many rows travel as text arrays). Binary text is the
   * string's UTF-8 bytes; a binary array is a header and each element's length and bytes.
   */
  const TEXT = 25;
  const TEXT_ARRAY = 1009;
  const asText = (x: unknown): string => (typeof x === 'string' ? x : x instanceof Date ? x.toISOString() : String(x));
  const textParam = (x: unknown): unknown => Buffer.from(asText(x), 'utf8');
  const textArrayParam = (fallback: ((x: unknown) => unknown) | undefined) => (xs: unknown): unknown => {
    if (!Array.isArray(xs)) return xs;
    let bound = 20;
    for (const x of xs) {
      if (Array.isArray(x)) return fallback ? fallback(xs) : xs; // several dimensions: PGlite's own text form
      bound += 4 + (x === null || x === undefined ? 0 : 3 * asText(x).length);
    }
    const out = Buffer.allocUnsafe(bound);
    const empty = xs.length === 0;
    out.writeInt32BE(empty ? 0 : 1, 0); // dimensions
    out.writeInt32BE(xs.some((x) => x === null || x === undefined) ? 1 : 0, 4);
    out.writeInt32BE(TEXT, 8);
    if (empty) return out.subarray(0, 12);
    out.writeInt32BE(xs.length, 12);
    out.writeInt32BE(1, 16); // lower bound
    let at = 20;
    for (const x of xs) {
      if (x === null || x === undefined) {
        out.writeInt32BE(-1, at);
        at += 4;
        continue;
      }
      const written = out.write(asText(x), at + 4, 'utf8');
      out.writeInt32BE(written, at);
      at += 4 + written;
    }
    return out.subarray(0, at);
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
  const defaults = (pg as unknown as { serializers?: Record<number, (x: unknown) => unknown> }).serializers;
  const serializers = { [TEXT]: textParam, [TEXT_ARRAY]: textArrayParam(defaults?.[TEXT_ARRAY]) } as unknown as NonNullable<Parameters<PGlite['query']>[2]>['serializers'];
  port.on('message', (msg: { id: number; op: string; sql?: string; params?: unknown[]; copy?: string; channel?: string }) => {
    void (async () => {
      try {
        switch (msg.op) {
          case 'query': {
            const res =
              msg.copy === undefined
                ? await pg.query(msg.sql as string, msg.params ?? [], { serializers })
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
