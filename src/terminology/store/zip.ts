import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { ReleaseFileError } from './release-file-error.js';
import { createInflateRaw } from 'node:zlib';

/**
 * Reads the entries of a ZIP archive (docs/terminology.md#loinc: a LOINC release may be loaded
 * from its .zip): the central directory is read once, and an entry is streamed from the file
 * (inflated on the fly), so no entry is held in memory or unpacked to disk. Stored and deflated
 * entries; archives and entries under 4 GiB (no ZIP64), no encryption.
 */
export interface ZipEntry {
  /** Path inside the archive, with `/` separators. */
  name: string;
  method: number;
  compressedSize: number;
  size: number;
  localHeader: number;
}

const EOCD = 0x06054b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;

export async function zipEntries(path: string): Promise<ZipEntry[]> {
  const fh = await open(path, 'r');
  try {
    const { size } = await fh.stat();
    const tailLength = Math.min(size, 65_557);
    const tail = Buffer.alloc(tailLength);
    await fh.read(tail, 0, tailLength, size - tailLength);
    let eocd = -1;
    for (let i = tailLength - 22; i >= 0; i--) {
      if (tail.readUInt32LE(i) === EOCD) {
        eocd = i;
        break;
      }
    }
    if (eocd < 0) throw new Error(`${path} is not a ZIP archive`);
    const count = tail.readUInt16LE(eocd + 10);
    const dirSize = tail.readUInt32LE(eocd + 12);
    const dirOffset = tail.readUInt32LE(eocd + 16);
    if (count === 0xffff || dirOffset === 0xffffffff) throw new Error(`${path} is a ZIP64 archive, which is not supported: unpack it and import the folder`);
    const dir = Buffer.alloc(dirSize);
    await fh.read(dir, 0, dirSize, dirOffset);
    const entries: ZipEntry[] = [];
    let p = 0;
    for (let n = 0; n < count; n++) {
      if (dir.readUInt32LE(p) !== CENTRAL) throw new Error(`${path}: damaged ZIP central directory`);
      const flags = dir.readUInt16LE(p + 8);
      const method = dir.readUInt16LE(p + 10);
      const compressedSize = dir.readUInt32LE(p + 20);
      const entrySize = dir.readUInt32LE(p + 24);
      const nameLength = dir.readUInt16LE(p + 28);
      const extraLength = dir.readUInt16LE(p + 30);
      const commentLength = dir.readUInt16LE(p + 32);
      const localHeader = dir.readUInt32LE(p + 42);
      const name = dir.toString(flags & 0x800 ? 'utf8' : 'latin1', p + 46, p + 46 + nameLength).replace(/\\/g, '/');
      p += 46 + nameLength + extraLength + commentLength;
      if (name.endsWith('/')) continue;
      if (flags & 1) throw new Error(`${path}: ${name} is encrypted`);
      if (compressedSize === 0xffffffff || entrySize === 0xffffffff) throw new Error(`${path}: ${name} needs ZIP64, which is not supported: unpack it and import the folder`);
      entries.push({ name, method, compressedSize, size: entrySize, localHeader });
    }
    return entries;
  } finally {
    await fh.close();
  }
}

/**
 * The most an entry may inflate to, as a multiple of its compressed size (above 1 MiB): text
 * release files deflate 5–20 times; a zip bomb a thousand times.
 */
export const ZIP_MAX_RATIO = 200;
const RATIO_FREE_BYTES = 1 << 20;

/** Refuses an entry that declares more than ZIP_MAX_RATIO × its compressed size. */
function checkRatio(path: string, entry: ZipEntry): void {
  if (entry.size > RATIO_FREE_BYTES && entry.size > entry.compressedSize * ZIP_MAX_RATIO) {
    throw new ReleaseFileError(
      entry.name,
      undefined,
      `it would inflate to ${entry.size} bytes, more than ${ZIP_MAX_RATIO} times its ${entry.compressedSize} compressed bytes (a zip bomb?); if it is genuine, unpack the archive and import the folder`,
    );
  }
}

/**
 * The content of one entry, as a stream of bytes: never more than the size the archive
 * declares for it (an entry that inflates past that is an error, not a longer file).
 */
export async function zipEntryStream(path: string, entry: ZipEntry): Promise<NodeJS.ReadableStream> {
  checkRatio(path, entry);
  const fh = await open(path, 'r');
  let start: number;
  try {
    const header = Buffer.alloc(30);
    await fh.read(header, 0, 30, entry.localHeader);
    if (header.readUInt32LE(0) !== LOCAL) throw new Error(`${path}: damaged ZIP entry ${entry.name}`);
    start = entry.localHeader + 30 + header.readUInt16LE(26) + header.readUInt16LE(28);
  } finally {
    await fh.close();
  }
  if (entry.compressedSize === 0) return Readable.from([]);
  const raw = createReadStream(path, { start, end: start + entry.compressedSize - 1 });
  if (entry.method === 0) return raw;
  if (entry.method !== 8) throw new Error(`${path}: ${entry.name} uses ZIP compression method ${entry.method}, which is not supported`);
  const inflate = createInflateRaw();
  raw.on('error', (err) => inflate.destroy(err));
  let inflated = 0;
  const bounded = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      inflated += chunk.length;
      if (inflated > entry.size) {
        raw.destroy();
        done(new ReleaseFileError(entry.name, undefined, `it inflates to more than the ${entry.size} bytes the archive declares for it (a damaged archive or a zip bomb)`));
        return;
      }
      done(null, chunk);
    },
  });
  inflate.on('error', (err) => bounded.destroy(err));
  return raw.pipe(inflate).pipe(bounded);
}
