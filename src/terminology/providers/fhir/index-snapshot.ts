import type { Database, Queryable } from '../../../core/database.js';
import type { CodeSystemInfo } from '../../types.js';
import { checksum, decodeSnapshot, encodeSnapshot, SNAPSHOT_FORMAT, SnapshotUnreadable, type SnapshotParts } from './snapshot-format.js';

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

/** A snapshot read back, or why none was read (`missing`: none written; else the reason it was not usable). */
export type SnapshotRead = { parts: SnapshotParts; bytes: number; ms: number } | { missing: true } | { unusable: string };

/** Reads the snapshot of `section` of index `csKey` if it is there and valid. */
export async function readSnapshot(q: Queryable, csKey: number, section: string, key: string): Promise<SnapshotRead> {
  const started = performance.now();
  const head = await q.query<{ format: number; key: string; chunks: number; bytes: string | number; crc: string | number }>(
    'SELECT format, key, chunks, bytes, crc FROM tx_index_snapshot WHERE cs_key = $1 AND section = $2',
    [csKey, section],
  );
  if (head.rows.length === 0) return { missing: true };
  const h = head.rows[0];
  if (h.format !== SNAPSHOT_FORMAT) return { unusable: `format ${h.format}, this version writes ${SNAPSHOT_FORMAT}` };
  if (h.key !== key) return { unusable: `written for ${h.key}, the code system is ${key}` };
  const chunks: Uint8Array[] = [];
  for (let seq = 0; seq < h.chunks; seq++) {
    const r = await q.query<{ data: Uint8Array }>('SELECT data FROM tx_index_snapshot_chunk WHERE cs_key = $1 AND section = $2 AND seq = $3', [csKey, section, seq]);
    if (r.rows.length === 0) return { unusable: `chunk ${seq} of ${h.chunks} is missing` };
    chunks.push(r.rows[0].data);
  }
  const bytes = chunks.reduce((n, c) => n + c.length, 0);
  if (bytes !== Number(h.bytes)) return { unusable: `${bytes} bytes stored, the header says ${h.bytes}` };
  if (checksum(chunks) !== Number(h.crc)) return { unusable: 'checksum mismatch' };
  try {
    return { parts: decodeSnapshot(chunks), bytes, ms: performance.now() - started };
  } catch (err) {
    if (err instanceof SnapshotUnreadable) return { unusable: err.message };
    throw err;
  }
}

/**
 * Writes (replaces) the snapshot of `section` of index `csKey`: the chunks, each its own short
 * statement, then the header that makes them readable. Nothing is written for an index that is
 * gone meanwhile (the foreign key refuses it). Returns the bytes written.
 */
export async function writeSnapshot(db: Database, csKey: number, section: string, key: string, parts: SnapshotParts): Promise<number> {
  const buffers = encodeSnapshot(parts);
  const whole = Buffer.concat(buffers);
  const crc = checksum([whole]);
  // The old header goes first: until the new one is written, no reader takes a mixture.
  await db.query('DELETE FROM tx_index_snapshot WHERE cs_key = $1 AND section = $2', [csKey, section]);
  let seq = 0;
  for (let at = 0; at < whole.length; at += CHUNK, seq++) {
    const data = whole.subarray(at, Math.min(at + CHUNK, whole.length)).toString('base64');
    await db.query(
      `INSERT INTO tx_index_snapshot_chunk (cs_key, section, seq, data) VALUES ($1, $2, $3, decode($4, 'base64'))
       ON CONFLICT (cs_key, section, seq) DO UPDATE SET data = excluded.data`,
      [csKey, section, seq, data],
    );
  }
  await db.query('DELETE FROM tx_index_snapshot_chunk WHERE cs_key = $1 AND section = $2 AND seq >= $3', [csKey, section, seq]);
  await db.query(
    `INSERT INTO tx_index_snapshot (cs_key, section, format, key, chunks, bytes, crc) VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (cs_key, section) DO UPDATE SET format = excluded.format, key = excluded.key, chunks = excluded.chunks,
       bytes = excluded.bytes, crc = excluded.crc, written_at = now()`,
    [csKey, section, SNAPSHOT_FORMAT, key, seq, whole.length, crc],
  );
  return whole.length;
}
