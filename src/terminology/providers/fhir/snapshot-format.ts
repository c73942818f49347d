import { isAscii } from 'node:buffer';
import { crc32 } from 'node:zlib';
import { FhirError, issue } from '../../../fhir/outcome.js';

/**
 * The binary form of a persisted in-memory index (docs/terminology.md#persisted-indexes): named
 * parts, each an Int32Array, a Uint8Array or a string, laid out so that reading it back makes
 * typed arrays and one string per text column — no object per concept — and so that a part
 * can be read alone (a point answer reads only the parts it needs: snapshot-reader.ts).
 *
 * Layout: `u32 header length`, the header (JSON: format, byte order, each part's name, kind,
 * offset, length and CRC-32), padding to 8, then the numeric parts (each at an offset that is
 * a multiple of 8), then the text parts (UTF-8, or UTF-16LE for a string that is not
 * well-formed, whose lone surrogates UTF-8 cannot carry). The snapshot's checksum is the
 * CRC-32 of its head (length word, header, padding): the header lists every part's checksum,
 * so a head that matches vouches for each part, checked when that part is read.
 */

/** Bumped whenever the layout of the parts any index writes changes: older snapshots are rebuilt. */
export const SNAPSHOT_FORMAT = 2;

export type SnapshotPart = Int32Array | Uint8Array | string | AsciiText;

/**
 * A text part all of whose bytes are ASCII, kept as those bytes rather than decoded (its
 * characters are its bytes, so a text column's offsets hold for both): what an index opens
 * with, decoded later (flat-columns.ts TextColumn).
 */
export class AsciiText {
  constructor(readonly bytes: Buffer) {}

  toString(): string {
    return this.bytes.toString('latin1');
  }
}
export type SnapshotParts = Map<string, SnapshotPart>;

/** What the loaders read parts from: the parts in memory (a Map), or a snapshot read part by part. */
export interface PartSource {
  get(name: string): SnapshotPart | undefined;
}

export interface PartEntry {
  name: string;
  kind: 'i32' | 'u8' | 'utf8' | 'utf16';
  /** From the start of the numeric section. */
  offset: number;
  /** Elements (numeric) or bytes (text). */
  length: number;
  /** CRC-32 of the part's bytes (without padding). */
  crc: number;
}

export interface Header {
  format: number;
  littleEndian: boolean;
  numeric: number;
  parts: PartEntry[];
}

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
const align8 = (n: number) => (n + 7) & ~7;

/** The parts as bytes (a list of buffers to write one after the other; the first is the head, whose checksum is the snapshot's). */
export function encodeSnapshot(parts: SnapshotParts): Buffer[] {
  const entries: PartEntry[] = [];
  const numeric: Buffer[] = [];
  const texts: Buffer[] = [];
  let offset = 0;
  for (const [name, part] of parts) {
    if (typeof part === 'string' || part instanceof AsciiText) continue;
    const bytes = Buffer.from(part.buffer, part.byteOffset, part.byteLength);
    entries.push({ name, kind: part instanceof Int32Array ? 'i32' : 'u8', offset, length: part.length, crc: checksum([bytes]) });
    numeric.push(bytes, Buffer.alloc(align8(bytes.length) - bytes.length));
    offset += align8(bytes.length);
  }
  const numericBytes = offset;
  for (const [name, given] of parts) {
    if (!(typeof given === 'string' || given instanceof AsciiText)) continue;
    const part = String(given);
    const wellFormed = (part as string & { isWellFormed?: () => boolean }).isWellFormed?.() ?? !/[\uD800-\uDFFF]/.test(part);
    const bytes = Buffer.from(part, wellFormed ? 'utf8' : 'utf16le');
    entries.push({ name, kind: wellFormed ? 'utf8' : 'utf16', offset, length: bytes.length, crc: checksum([bytes]) });
    texts.push(bytes);
    offset += bytes.length;
  }
  const header = Buffer.from(JSON.stringify({ format: SNAPSHOT_FORMAT, littleEndian: LITTLE_ENDIAN, numeric: numericBytes, parts: entries } satisfies Header));
  const head = Buffer.alloc(align8(4 + header.length));
  head.writeUInt32LE(header.length, 0);
  header.copy(head, 4);
  return [head, ...numeric, ...texts];
}

/**
 * Why bytes are not a snapshot this code can read. Met by a request (a part read when first
 * needed), it answers 503 `transient`: the index is dropped and read again from the database.
 */
export class SnapshotUnreadable extends FhirError {
  constructor(readonly reason: string) {
    super(503, [issue('transient', `A terminology index file was unreadable (${reason}); it is read again from the database: try again`)], { 'Retry-After': '1' });
    this.name = 'SnapshotUnreadable';
  }
}

/** Where a snapshot's parts are: its header, and the offset its numeric parts start at. */
export interface SnapshotLayout {
  header: Header;
  /** Offset of the numeric parts (the text parts follow them, at `base + header.numeric`). */
  base: number;
  /** Parts by name. */
  entries: Map<string, PartEntry>;
}

/**
 * The layout of a snapshot of `total` bytes from its head (`headBytes` of its first 4 bytes),
 * when the head's CRC-32 is `crc`. Throws SnapshotUnreadable when it is not, or the head is not
 * a snapshot this code reads, or describes another size.
 */
export function snapshotLayout(head: Uint8Array, total: number, crc: number): SnapshotLayout {
  if (head.length < 4 || total < 4) throw new SnapshotUnreadable('truncated');
  const headerLength = bufferOf(head).readUInt32LE(0);
  if (4 + headerLength > total || align8(4 + headerLength) !== head.length) throw new SnapshotUnreadable('truncated header');
  if (checksum([head]) !== crc) throw new SnapshotUnreadable('checksum mismatch');
  let header: Header;
  try {
    header = JSON.parse(bufferOf(head.subarray(4, 4 + headerLength)).toString('utf8')) as Header;
  } catch {
    throw new SnapshotUnreadable('unreadable header');
  }
  if (header.format !== SNAPSHOT_FORMAT) throw new SnapshotUnreadable(`format ${header.format}, this version reads ${SNAPSHOT_FORMAT}`);
  if (header.littleEndian !== LITTLE_ENDIAN) throw new SnapshotUnreadable('written on a machine of the other byte order');
  const base = align8(4 + headerLength);
  const end = header.parts.reduce((n, p) => Math.max(n, p.offset + partBytes(p)), 0);
  if (base + end !== total || header.numeric > end) throw new SnapshotUnreadable(`size ${total}, the header describes ${base + end}`);
  return { header, base, entries: new Map(header.parts.map((p) => [p.name, p])) };
}

/** Bytes of a snapshot's head (length word, header, padding) given its first 4 bytes. */
export function headBytes(first4: Uint8Array): number {
  return align8(4 + bufferOf(first4).readUInt32LE(0));
}

/** Where part `p`'s bytes are in the snapshot, and how many (without padding). */
export function partRange(layout: SnapshotLayout, p: PartEntry): { at: number; bytes: number } {
  return { at: layout.base + p.offset, bytes: p.kind === 'i32' ? p.length * 4 : p.length };
}

/**
 * Part `p` from its bytes (`bytes`: exactly its range; a numeric part becomes a view over
 * them, so give it a buffer of its own), after checking their CRC-32 against the header's.
 */
export function partOf(p: PartEntry, bytes: Uint8Array): SnapshotPart {
  if (checksum([bytes]) !== p.crc) throw new SnapshotUnreadable(`checksum mismatch in part ${p.name}`);
  return checkedPart(p, bytes);
}

/** `partOf` of bytes whose checksum was checked. */
function checkedPart(p: PartEntry, bytes: Uint8Array): SnapshotPart {
  if (p.kind === 'i32') {
    if (bytes.byteOffset % 4 !== 0) bytes = bytes.slice();
    return new Int32Array(bytes.buffer, bytes.byteOffset, p.length);
  }
  if (p.kind === 'u8') return bytes;
  return bufferOf(bytes).toString(p.kind === 'utf8' ? 'utf8' : 'utf16le');
}

/**
 * `partOf` in slices of at most SLICE bytes, giving the event loop back after each: a part read
 * in the background (tens of MB: the checksum and the decoding of its text) never holds a
 * request up for more than a slice. The same part, the same checks.
 */
export async function partOfInSlices(p: PartEntry, bytes: Uint8Array, asciiAsBytes = false): Promise<SnapshotPart> {
  let crc = 0;
  for (let at = 0; at < bytes.length; at += SLICE) {
    crc = crc32(bytes.subarray(at, Math.min(at + SLICE, bytes.length)), crc);
    await turn();
  }
  if (crc >>> 0 !== p.crc) throw new SnapshotUnreadable(`checksum mismatch in part ${p.name}`);
  if (p.kind === 'i32' || p.kind === 'u8') return checkedPart(p, bytes);
  const buffer = bufferOf(bytes);
  if (asciiAsBytes && p.kind === 'utf8' && isAscii(buffer)) return new AsciiText(buffer);
  const pieces: string[] = [];
  for (let at = 0; at < bytes.length; ) {
    let end = Math.min(at + SLICE, bytes.length);
    // Cut between characters: UTF-8 not inside a sequence (continuation bytes are 10xxxxxx), UTF-16 at a code unit.
    let cut = end;
    if (p.kind === 'utf8') while (cut < bytes.length && cut > at + 4 && (bytes[cut] & 0xc0) === 0x80) cut--;
    else cut -= (cut - at) % 2;
    if (cut > at) end = cut;
    pieces.push(buffer.toString(p.kind === 'utf8' ? 'utf8' : 'utf16le', at, end));
    at = end;
    await turn();
  }
  // One flat string (a join copies the pieces into one), as `partOf` makes.
  return pieces.length === 1 ? pieces[0] : pieces.join('');
}

/** Bytes checked or decoded between two turns of the event loop (~1 ms of work). */
const SLICE = 1 << 20;

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The parts of a snapshot given as consecutive chunks (the database's copy), each checked, when
 * its head's checksum is `crc`. Numeric parts are copied into buffers of their own (the chunks
 * are not kept); texts are decoded once each.
 */
export function decodeSnapshot(chunks: Uint8Array[], crc: number): SnapshotParts {
  const total = chunks.reduce((n, c) => n + c.length, 0);
  const at = new ChunkReader(chunks);
  if (total < 4) throw new SnapshotUnreadable('truncated');
  const headLength = headBytes(at.read(0, 4));
  if (headLength > total) throw new SnapshotUnreadable('truncated header');
  const layout = snapshotLayout(at.read(0, headLength), total, crc);
  const parts: SnapshotParts = new Map();
  for (const p of layout.header.parts) {
    const { at: from, bytes } = partRange(layout, p);
    const numeric = p.kind === 'i32' || p.kind === 'u8';
    const own = numeric ? new Uint8Array(bytes) : at.read(from, bytes);
    if (numeric) at.copyInto(own, from);
    parts.set(p.name, partOf(p, own));
  }
  return parts;
}

/** Bytes a part takes in the layout (numeric parts are padded to 8). */
function partBytes(p: PartEntry): number {
  if (p.kind === 'i32') return align8(p.length * 4);
  return p.kind === 'u8' ? align8(p.length) : p.length;
}

/** A Buffer over the same bytes (no copy). */
const bufferOf = (u: Uint8Array) => Buffer.from(u.buffer, u.byteOffset, u.byteLength);

/** Reads byte ranges across consecutive chunks (copying only when a range spans two). */
class ChunkReader {
  private readonly starts: number[] = [];
  constructor(private readonly chunks: Uint8Array[]) {
    let n = 0;
    for (const c of chunks) {
      this.starts.push(n);
      n += c.length;
    }
  }

  read(from: number, length: number): Uint8Array {
    const i = this.chunkAt(from);
    const c = this.chunks[i];
    const local = from - this.starts[i];
    if (local + length <= c.length) return c.subarray(local, local + length);
    const out = new Uint8Array(length);
    this.copyInto(out, from);
    return out;
  }

  /** Fills `out` with the bytes from `from` on. */
  copyInto(out: Uint8Array, from: number): void {
    let done = 0;
    for (let i = this.chunkAt(from); done < out.length && i < this.chunks.length; i++) {
      const c = this.chunks[i];
      const local = done === 0 ? from - this.starts[i] : 0;
      const take = Math.min(c.length - local, out.length - done);
      out.set(c.subarray(local, local + take), done);
      done += take;
    }
  }

  private chunkAt(offset: number): number {
    let i = 0;
    while (i + 1 < this.starts.length && this.starts[i + 1] <= offset) i++;
    return i;
  }
}

/** CRC-32 of consecutive buffers (a corrupted or partly written snapshot is not read). */
export function checksum(chunks: Uint8Array[]): number {
  let crc = 0;
  for (const c of chunks) crc = crc32(c, crc);
  return crc >>> 0;
}
