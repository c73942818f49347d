import { createHash, randomUUID } from 'node:crypto';
import type { Resource } from '@medplum/fhirtypes';
import type { BinaryStore, ContentAnswer, ContentRequest, RawBody, StagedContent } from '../core/binary.js';
import type { Database, Queryable } from '../core/database.js';
import { FhirError, issue } from '../fhir/outcome.js';
import { byteRange, disposition, servedType } from './content-headers.js';
import { STAGED, asStoredBinary } from './marks.js';

/** Bytes per stored chunk: one statement each way; a range read fetches only the chunks it covers. */
export const CHUNK_SIZE = 1024 * 1024;
/**
 * Bytes of content one read statement answers (`bytes`): small enough that each answer dies
 * young in the JavaScript heap. With whole 1 MiB chunks a 200 MB download grew the server by up
 * to 95 MB of garbage waiting for a full collection; with 64 KiB, by 40-50 MB.
 */
const READ_SLICE = 64 * 1024;

/** A content row of a stored Binary version. */
interface ContentRow {
  id: string;
  size: string | number;
  sha256: string | null;
  chunk_size: number;
  filename: string | null;
}

/** Staged content as this store hands it out (its sha-256 names it in the stored Binary). */
interface Staged extends StagedContent {
  sha256: string;
}

/**
 * Binary content in the database (docs/rest.md#binary), through the `Database` contract only:
 * chunks of `CHUNK_SIZE` bytes in a bytea column, so it works on both drivers, on every node,
 * and is in every backup of the database. Content streams in and out: about two chunks of one
 * request are in memory at a time.
 *
 * Chunks are written as base64 text parameters (`decode` in SQL), not as bytea parameters:
 * PGlite (0.5) serializes a bytea parameter byte by byte in JavaScript (an array of a million
 * strings per MiB), which made a 200 MB upload grow the server by ~385 MB; base64 is made
 * natively and is a plain string for any driver. They are read as bytea (Uint8Array/Buffer):
 * PGlite parses those byte by byte too (slow: a few MB/s), but reading hex or base64 text through
 * its thread made the server grow by ~350 MB. A native bytea parser and serializer for PGlite
 * (its `parsers`/`serializers` options) would make both directions plain bytea.
 */
export class ContentStore implements BinaryStore {
  constructor(
    private readonly db: Database,
    readonly limit: number,
  ) {}

  async stage(projectId: string | undefined, body: RawBody, filename?: string): Promise<Staged> {
    const id = randomUUID();
    await this.db.query('INSERT INTO binary_content (id, project_id, chunk_size, filename) VALUES ($1, $2, $3, $4)', [
      id,
      projectId ?? null,
      CHUNK_SIZE,
      filename ?? null,
    ]);
    const hash = createHash('sha256');
    let size = 0;
    let seq = 0;
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    try {
      for await (const piece of body.stream) {
        const bytes = Buffer.isBuffer(piece) ? piece : Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
        hash.update(bytes);
        size += bytes.length;
        pending.push(bytes);
        pendingBytes += bytes.length;
        while (pendingBytes >= CHUNK_SIZE) {
          const all = pending.length === 1 ? pending[0] : Buffer.concat(pending);
          await this.writeChunk(id, seq++, all.subarray(0, CHUNK_SIZE));
          pending = pendingBytes > CHUNK_SIZE ? [all.subarray(CHUNK_SIZE)] : [];
          pendingBytes -= CHUNK_SIZE;
        }
      }
      if (pendingBytes > 0) await this.writeChunk(id, seq++, Buffer.concat(pending));
      const sha256 = hash.digest('hex');
        const done = await this.db.query('UPDATE binary_content SET size = $2, sha256 = $3, touched_at = now() WHERE id = $1 AND NOT stored', [id, size, sha256]);
      if (done.rowCount !== 1) throw abandoned();
      return { id, size, sha256 };
    } catch (err) {
      await this.discard(id);
      throw err;
    }
  }

  withContent<T extends Resource>(binary: T, staged: StagedContent): T {
    return { ...binary, [STAGED]: { id: staged.id, sha256: (staged as Staged).sha256 } };
  }

  async release(staged: StagedContent): Promise<void> {
    await this.discard(staged.id);
  }

  /** In a Binary version's write transaction: the staged content becomes that version's. */
  async attach(tx: Queryable, contentId: string, binary: Resource): Promise<void> {
    const res = await tx.query('UPDATE binary_content SET stored = true, project_id = $2, touched_at = now() WHERE id = $1 AND NOT stored', [
      contentId,
      binary.meta?.project ?? null,
    ]);
    if (res.rowCount !== 1) throw abandoned();
    await this.mapVersion(tx, binary, contentId);
  }

  /** In a Binary version's write transaction: a version written without new content keeps `previous`'s. */
  async carryOver(tx: Queryable, binary: Resource, previous: Resource): Promise<void> {
    await tx.query(
      `INSERT INTO binary_version (binary_id, version_id, content_id)
       SELECT $1, $2, content_id FROM binary_version WHERE binary_id = $1 AND version_id = $3`,
      [binary.id, Number(binary.meta?.versionId), Number(previous.meta?.versionId)],
    );
  }

  /** In a Binary version's write transaction: content that came as FHIR JSON `data`, stored with it. */
  async insertInline(tx: Queryable, bytes: Buffer, sha256: string, binary: Resource): Promise<void> {
    const id = randomUUID();
    await tx.query(`INSERT INTO binary_content (id, project_id, stored, size, sha256, chunk_size) VALUES ($1, $2, true, $3, $4, $5)`, [
      id,
      binary.meta?.project ?? null,
      bytes.length,
      sha256,
      CHUNK_SIZE,
    ]);
    for (let seq = 0; seq * CHUNK_SIZE < bytes.length; seq++) {
      const data = bytes.subarray(seq * CHUNK_SIZE, (seq + 1) * CHUNK_SIZE).toString('base64');
      await tx.query(`INSERT INTO binary_chunk (content_id, seq, data) VALUES ($1, $2, decode($3, 'base64'))`, [id, seq, data]);
    }
    await this.mapVersion(tx, binary, id);
  }

  private async mapVersion(tx: Queryable, binary: Resource, contentId: string): Promise<void> {
    await tx.query('INSERT INTO binary_version (binary_id, version_id, content_id) VALUES ($1, $2, $3)', [binary.id, Number(binary.meta?.versionId), contentId]);
  }

  async answer(resource: Resource, request: ContentRequest): Promise<ContentAnswer> {
    const binary = asStoredBinary(resource);
    const row = await this.contentOf(binary);
    const size = row ? Number(row.size) : 0;
    const contentType = servedType(binary.contentType);
    const etag = `"${binary.meta?.versionId ?? '0'}"`;
    const headers: Record<string, string> = {
      'X-Content-Type-Options': 'nosniff',
      'Content-Disposition': disposition(contentType, row?.filename ?? undefined),
      ETag: etag,
      'Accept-Ranges': 'bytes',
    };
    if (binary.meta?.lastUpdated) headers['Last-Modified'] = new Date(binary.meta.lastUpdated).toUTCString();
    if (request.ifNoneMatch && request.ifNoneMatch.split(',').some((t) => t.trim().replace(/^W\//, '') === etag || t.trim() === '*')) {
      return { status: 304, headers };
    }
    // If-Range with another validator: the content changed, so the whole of it is sent.
    const range = request.ifRange === undefined || request.ifRange.trim() === etag ? byteRange(request.range, size) : undefined;
    if (range === 'unsatisfiable') return { status: 416, headers: { ...headers, 'Content-Range': `bytes */${size}` } };
    const start = range?.start ?? 0;
    const end = range ? range.end + 1 : size;
    headers['Content-Length'] = String(end - start);
    if (range) headers['Content-Range'] = `bytes ${start}-${range.end}/${size}`;
    const stream = row ? this.bytes(row, start, end) : empty();
    return { status: range ? 206 : 200, headers, raw: { contentType, stream } };
  }

  async base64(resource: Resource, maxBytes: number): Promise<string | undefined> {
    const row = await this.contentOf(asStoredBinary(resource));
    if (!row) return undefined;
    const size = Number(row.size);
    if (size > maxBytes) {
      throw new FhirError(406, [
        issue(
          'too-costly',
          `Binary content of ${size} bytes is larger than LATTICE_BODY_LIMIT (${maxBytes} bytes) allows inside FHIR JSON: read it as its own content type (Accept: */*)`,
        ),
      ]);
    }
    const parts: Buffer[] = [];
    for await (const part of this.bytes(row, 0, size)) parts.push(part);
    return Buffer.concat(parts).toString('base64');
  }

  /**
   * Removes staged content that stopped growing `idleSeconds` ago (an upload whose client or
   * server went away, e.g. a `kill -9` mid-upload); returns how many uploads were removed.
   */
  async sweep(idleSeconds: number): Promise<number> {
    const res = await this.db.query(`DELETE FROM binary_content WHERE NOT stored AND touched_at < now() - make_interval(secs => $1)`, [idleSeconds]);
    return res.rowCount;
  }

  /** Removes every staged upload (start-up of the embedded database: no other process can be uploading). */
  async sweepAll(): Promise<number> {
    return (await this.db.query('DELETE FROM binary_content WHERE NOT stored')).rowCount;
  }

  private async discard(id: string): Promise<void> {
    await this.db.query('DELETE FROM binary_content WHERE id = $1 AND NOT stored', [id]);
  }

  /** One chunk in its own short statement; the upload's row is touched so the sweep leaves it. */
  private async writeChunk(id: string, seq: number, data: Buffer): Promise<void> {
    const res = await this.db.query(
      `WITH live AS (UPDATE binary_content SET touched_at = now() WHERE id = $1 AND NOT stored RETURNING id)
       INSERT INTO binary_chunk (content_id, seq, data) SELECT id, $2, decode($3, 'base64') FROM live`,
      [id, seq, data.toString('base64')],
    );
    if (res.rowCount !== 1) throw abandoned();
  }

  private async contentOf(binary: { id?: string; meta?: { versionId?: string } }): Promise<ContentRow | undefined> {
    if (!binary.id || !binary.meta?.versionId) return undefined;
    const res = await this.db.query<ContentRow>(
      `SELECT c.id, c.size, c.sha256, c.chunk_size, c.filename FROM binary_version v JOIN binary_content c ON c.id = v.content_id
       WHERE v.binary_id = $1 AND v.version_id = $2`,
      [binary.id, Number(binary.meta.versionId)],
    );
    return res.rows[0];
  }

  /** Bytes `start` (inclusive) to `end` (exclusive) of stored content, `READ_SLICE` bytes per statement. */
  private async *bytes(row: ContentRow, start: number, end: number): AsyncGenerator<Buffer> {
    const chunk = row.chunk_size;
    for (let at = start; at < end; ) {
      const seq = Math.floor(at / chunk);
      const from = at - seq * chunk;
      const length = Math.min(chunk - from, end - at, READ_SLICE);
      at += length;
      const res = await this.db.query<{ data: Uint8Array }>('SELECT substring(data FROM $3 FOR $4) AS data FROM binary_chunk WHERE content_id = $1 AND seq = $2', [
        row.id,
        seq,
        from + 1,
        length,
      ]);
      const data = res.rows[0]?.data;
      if (!data) throw new Error(`Binary content ${row.id}: chunk ${seq} is missing`);
      yield Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    }
  }
}

/** Staged content that was swept while its upload was still running (idle past LATTICE_BINARY_STAGE_IDLE). */
function abandoned(): FhirError {
  return new FhirError(408, [issue('timeout', 'The upload stored nothing for longer than LATTICE_BINARY_STAGE_IDLE allows and was abandoned: send it again')]);
}

async function* empty(): AsyncGenerator<Buffer> {
  // no content
}
