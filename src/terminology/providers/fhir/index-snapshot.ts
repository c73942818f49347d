import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Database, Queryable } from '../../../core/database.js';
import type { CodeSystemInfo } from '../../types.js';
import { AsciiText, checksum, decodeSnapshot, encodeSnapshot, SNAPSHOT_FORMAT, SnapshotUnreadable, type PartSource, type SnapshotPart, type SnapshotParts } from './snapshot-format.js';
import { SnapshotFile } from './snapshot-file.js';

/**
 * Persisted in-memory indexes (docs/terminology.md#persisted-indexes): what building an index
 * made, written to the database (migration 590) so that a restart — on any node of a
 * PostgreSQL deployment, or a PGlite folder — reads it in a few statements instead of
 * rebuilding it from the index tables. One snapshot per code-system index (`cs_key`) and
 * section (`index`: the code-system index; `snomed`: a SNOMED CT edition's graph), in chunks
 * written first and a header written last: a snapshot is read only when its header matches the
 * format this code writes, the code system's url, version and concept count, and the CRC-32 of
 * its bytes; anything else is rebuilt from the tables (the source of truth) and logged.
 * Removed with the index (foreign key, ON DELETE CASCADE).
 */

/** Snapshot section of a code-system index (the SNOMED CT graph has its own: sct-index.ts). */
export const INDEX_SECTION = 'index';

/** Bytes per stored chunk (one statement each, so none holds the database long). */
const CHUNK = 4 * 1024 * 1024;

/** What a snapshot must match to be read: the code system's identity and size. */
export function snapshotKey(cs: Pick<CodeSystemInfo, 'url' | 'version' | 'conceptCount'>): string {
  return `${cs.url}|${cs.version ?? ''}|${cs.conceptCount}`;
}

/**
 * A snapshot read back, or why none was read (`missing`: none written; else the reason it was
 * not usable). `file`: the parts are read from the file copy when asked for (`lazy` reads);
 * otherwise they are all in memory.
 */
export type SnapshotRead = { parts: PartSource; file?: SnapshotFile; bytes: number; ms: number; from: 'file' | 'database' } | { missing: true } | { unusable: string };

/**
 * Embedded databases (PGlite) keep a copy of each snapshot in a folder beside their data
 * folder: a file reads in a fraction of the time the embedded database takes to return the
 * same bytes. The database copy stays the reference — a file is used only when its size and
 * checksum are those of the database's header.
 */
const folders = new WeakMap<Database, string>();

/** Keeps file copies of `db`'s snapshots in `folder` (created when needed). */
export function useSnapshotFolder(db: Database, folder: string): void {
  folders.set(db, folder);
}

/**
 * Where the file copies of snapshots live (docs/terminology.md#persisted-indexes):
 * `LATTICE_TX_INDEX_DIR` (`off`: nowhere), else `<data folder>-tx-index` beside a PGlite data
 * folder, else, on PostgreSQL, `lattice-tx-index/<database>` under the system's temporary
 * folder — named after the server's host, port and database, so two databases never share
 * one. An in-memory database keeps none.
 */
export function snapshotFolder(config: { dataDir: string; databaseUrl?: string; txIndexDir?: string }): string | undefined {
  if (config.txIndexDir === 'off') return undefined;
  if (config.txIndexDir) return resolve(config.txIndexDir);
  if (config.databaseUrl) {
    const url = new URL(config.databaseUrl);
    const where = `${url.hostname}:${url.port || '5432'}${url.pathname}|${url.searchParams.get('host') ?? ''}`;
    return join(tmpdir(), 'lattice-tx-index', createHash('sha256').update(where).digest('hex').slice(0, 16));
  }
  return config.dataDir.startsWith('memory://') ? undefined : `${resolve(config.dataDir)}-tx-index`;
}

const fileOf = (folder: string, csKey: number, section: string) => join(folder, `${csKey}.${section}.snapshot`);

/**
 * Reads the snapshot of `section` of index `csKey` if it is there and valid. From a file copy,
 * `lazy` returns the file open, its parts read when asked for (the caller closes it); else
 * every part is read now.
 */
export async function readSnapshot(db: Database, csKey: number, section: string, key: string, lazy = false): Promise<SnapshotRead> {
  const started = performance.now();
  const head = await db.query<{ format: number; key: string; chunks: number; bytes: string | number; crc: string | number }>(
    'SELECT format, key, chunks, bytes, crc FROM tx_index_snapshot WHERE cs_key = $1 AND section = $2',
    [csKey, section],
  );
  if (head.rows.length === 0) return { missing: true };
  const h = head.rows[0];
  if (h.format !== SNAPSHOT_FORMAT) return { unusable: `format ${h.format}, this version writes ${SNAPSHOT_FORMAT}` };
  if (h.key !== key) return { unusable: `written for ${h.key}, the code system is ${key}` };
  const folder = folders.get(db);
  try {
    const file = folder ? await SnapshotFile.open(fileOf(folder, csKey, section), Number(h.bytes), Number(h.crc)) : undefined;
    if (file && lazy) return { parts: file, file, bytes: Number(h.bytes), ms: performance.now() - started, from: 'file' };
    if (file) {
      try {
        const names = [...file.layout.entries.keys()];
        await file.prefetch(names);
        return { parts: new Map(names.map((n) => [n, file.get(n) as SnapshotPart])), bytes: Number(h.bytes), ms: performance.now() - started, from: 'file' };
      } catch (err) {
        if (!(err instanceof SnapshotUnreadable)) throw err;
        await file.discard(); // a part is not what the head says: read the database's copy, write the file again
      } finally {
        await file.close();
      }
    }
    const read = await db.readPass((q) => readChunks(q, csKey, section, h.chunks));
    if (typeof read === 'string') return { unusable: read };
    const bytes = read.reduce((n, c) => n + c.length, 0);
    if (bytes !== Number(h.bytes)) return { unusable: `${bytes} bytes stored, the header says ${h.bytes}` };
    const parts = decodeSnapshot(read, Number(h.crc));
    if (folder) await writeCopy(db, folder, csKey, section, read).catch(() => undefined);
    return { parts, bytes, ms: performance.now() - started, from: 'database' };
  } catch (err) {
    if (err instanceof SnapshotUnreadable) return { unusable: err.message };
    throw err;
  }
}

async function readChunks(q: Queryable, csKey: number, section: string, count: number): Promise<Uint8Array[] | string> {
  const chunks: Uint8Array[] = [];
  for (let seq = 0; seq < count; seq++) {
    // As base64 text: the drivers decode a bytea result in JavaScript byte by byte (PGlite: ~0.3 s a MB).
    const r = await q.query<{ data: string }>("SELECT encode(data, 'base64') AS data FROM tx_index_snapshot_chunk WHERE cs_key = $1 AND section = $2 AND seq = $3", [csKey, section, seq]);
    if (r.rows.length === 0) return `chunk ${seq} of ${count} is missing`;
    chunks.push(Buffer.from(r.rows[0].data, 'base64'));
  }
  return chunks;
}

/** Writes the file copy of a snapshot (whole, then renamed) and removes the copies of indexes that are gone. */
async function writeCopy(db: Database, folder: string, csKey: number, section: string, bytes: Uint8Array[]): Promise<void> {
  await mkdir(folder, { recursive: true });
  const file = fileOf(folder, csKey, section);
  await writeFile(`${file}.${process.pid}.tmp`, bytes);
  await rename(`${file}.${process.pid}.tmp`, file);
  const live = new Set((await db.query<{ cs_key: number }>('SELECT cs_key FROM tx_code_system')).rows.map((r) => r.cs_key));
  for (const name of await readdir(folder)) {
    const key = Number(name.split('.')[0]);
    if (name.endsWith('.snapshot') && !live.has(key)) await rm(join(folder, name), { force: true });
  }
}

/**
 * Writes (replaces) the snapshot of `section` of index `csKey`: the chunks, each its own short
 * statement, then the header that makes them readable (and the file copy, embedded databases).
 * Nothing is written for an index that is gone meanwhile (the foreign key refuses it). Returns
 * the bytes written.
 */
export async function writeSnapshot(db: Database, csKey: number, section: string, key: string, parts: SnapshotParts): Promise<number> {
  // The parts' bytes as they are (no copy of the whole: a LOINC or SNOMED CT index is hundreds of megabytes).
  const buffers = encodeSnapshot(parts);
  const total = buffers.reduce((n, b) => n + b.length, 0);
  // The head's checksum: the head lists each part's (snapshot-format.ts).
  const crc = checksum([buffers[0]]);
  // The old header goes first: until the new one is written, no reader takes a mixture.
  await db.query('DELETE FROM tx_index_snapshot WHERE cs_key = $1 AND section = $2', [csKey, section]);
  let seq = 0;
  for (const chunk of chunksOf(buffers, CHUNK)) {
    const data = chunk.toString('base64');
    seq++;
    await db.query(
      `INSERT INTO tx_index_snapshot_chunk (cs_key, section, seq, data) VALUES ($1, $2, $3, decode($4, 'base64'))
       ON CONFLICT (cs_key, section, seq) DO UPDATE SET data = excluded.data`,
      [csKey, section, seq - 1, data],
    );
  }
  await db.query('DELETE FROM tx_index_snapshot_chunk WHERE cs_key = $1 AND section = $2 AND seq >= $3', [csKey, section, seq]);
  await db.query(
    `INSERT INTO tx_index_snapshot (cs_key, section, format, key, chunks, bytes, crc) VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (cs_key, section) DO UPDATE SET format = excluded.format, key = excluded.key, chunks = excluded.chunks,
       bytes = excluded.bytes, crc = excluded.crc, written_at = now()`,
    [csKey, section, SNAPSHOT_FORMAT, key, seq, total, crc],
  );
  const folder = folders.get(db);
  if (folder) await writeCopy(db, folder, csKey, section, buffers);
  return total;
}

/** The bytes of `buffers` one after another, in pieces of `size` (the last may be shorter); a piece within one buffer is a view of it. */
function* chunksOf(buffers: Buffer[], size: number): Generator<Buffer> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  for (const buffer of buffers) {
    let at = 0;
    while (at < buffer.length) {
      const take = Math.min(size - pendingBytes, buffer.length - at);
      pending.push(buffer.subarray(at, at + take));
      pendingBytes += take;
      at += take;
      if (pendingBytes === size) {
        yield pending.length === 1 ? pending[0] : Buffer.concat(pending);
        pending = [];
        pendingBytes = 0;
      }
    }
  }
  if (pendingBytes > 0) yield pending.length === 1 ? pending[0] : Buffer.concat(pending);
}

/** Bytes the parts `names` of a snapshot read take in memory (read or not yet). */
export function partBytes(read: { parts: PartSource; file?: SnapshotFile }, names: string[]): number {
  if (read.file) return read.file.bytes(names);
  let n = 0;
  for (const name of names) {
    const p = read.parts.get(name);
    n += p === undefined ? 0 : typeof p === 'string' ? p.length * 2 : p instanceof AsciiText ? p.bytes.length : p.byteLength;
  }
  return n;
}
