import { createReadStream, promises as fs } from 'node:fs';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { createInflateRaw } from 'node:zlib';

/**
 * The files of an RF2 release (docs/terminology.md#snomed-ct), in a folder (searched
 * recursively) or a `.zip` (read in place: each member is streamed from its offset and
 * inflated, nothing is extracted). Only Snapshot files are used; each is read as a stream of
 * tab-separated rows, the header row first.
 */

export type Rf2Kind =
  | 'concept'
  | 'description'
  | 'textDefinition'
  | 'relationship'
  | 'concreteValues'
  | 'language'
  | 'moduleDependency'
  | 'refset';

export interface Rf2File {
  kind: Rf2Kind;
  /** Name as found (path inside the folder or the zip). */
  name: string;
  /** Bytes (uncompressed size for a zip member). */
  size: number;
  /** The file's lines, as read. */
  open(): AsyncIterable<Buffer>;
}

/** The kind of an RF2 file by its name; undefined for anything not used (Full/Delta files, stated relationships, readmes). */
export function rf2Kind(path: string): Rf2Kind | undefined {
  const name = path.split('/').pop() ?? '';
  if (!/\.txt$/i.test(name) || !/Snapshot/.test(name)) return undefined;
  if (/^sct2_Concept_/.test(name)) return 'concept';
  if (/^sct2_Description_/.test(name)) return 'description';
  if (/^sct2_TextDefinition_/.test(name)) return 'textDefinition';
  if (/^sct2_RelationshipConcreteValues_/.test(name)) return 'concreteValues';
  if (/^sct2_Relationship_/.test(name)) return 'relationship';
  if (/^der2_\w*Refset_Language/.test(name)) return 'language';
  if (/^der2_\w*Refset_ModuleDependency/.test(name)) return 'moduleDependency';
  if (/^(der2|sct2)_\w*Refset_/.test(name)) return 'refset';
  return undefined;
}

/** The RF2 Snapshot files of a folder or zip. */
export async function rf2Files(path: string): Promise<Rf2File[]> {
  const stat = await fs.stat(path);
  const files = stat.isDirectory() ? await folderFiles(path) : await zipFiles(path);
  return files.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

async function folderFiles(root: string): Promise<Rf2File[]> {
  const out: Rf2File[] = [];
  const walk = async (dir: string, rel: string) => {
    for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name);
      const name = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) await walk(full, name);
      else {
        const kind = rf2Kind(name);
        if (kind) out.push({ kind, name, size: (await fs.stat(full)).size, open: () => createReadStream(full) });
      }
    }
  };
  await walk(root, '');
  return out;
}

/** Members of a zip archive, from its central directory (stored and deflated members; no zip64). */
async function zipFiles(path: string): Promise<Rf2File[]> {
  const handle = await fs.open(path, 'r');
  try {
    const { size } = await handle.stat();
    const tailSize = Math.min(size, 65_557);
    const tail = Buffer.alloc(tailSize);
    await handle.read(tail, 0, tailSize, size - tailSize);
    let eocd = -1;
    for (let i = tailSize - 22; i >= 0; i--) {
      if (tail.readUInt32LE(i) === 0x06054b50) {
        eocd = i;
        break;
      }
    }
    if (eocd < 0) throw new Error(`${path} is neither a folder nor a zip archive`);
    const entries = tail.readUInt16LE(eocd + 10);
    const dirSize = tail.readUInt32LE(eocd + 12);
    const dirOffset = tail.readUInt32LE(eocd + 16);
    const dir = Buffer.alloc(dirSize);
    await handle.read(dir, 0, dirSize, dirOffset);
    const out: Rf2File[] = [];
    let p = 0;
    for (let i = 0; i < entries; i++) {
      if (dir.readUInt32LE(p) !== 0x02014b50) throw new Error(`${path}: damaged zip central directory`);
      const method = dir.readUInt16LE(p + 10);
      const compressed = dir.readUInt32LE(p + 20);
      const uncompressed = dir.readUInt32LE(p + 24);
      const nameLength = dir.readUInt16LE(p + 28);
      const extraLength = dir.readUInt16LE(p + 30);
      const commentLength = dir.readUInt16LE(p + 32);
      const localOffset = dir.readUInt32LE(p + 42);
      const name = dir.toString('utf8', p + 46, p + 46 + nameLength);
      p += 46 + nameLength + extraLength + commentLength;
      const kind = rf2Kind(name);
      if (!kind) continue;
      if (method !== 0 && method !== 8) throw new Error(`${path}: ${name} uses an unsupported zip compression method (${method})`);
      out.push({
        kind,
        name,
        size: uncompressed,
        open: () => zipMember(path, localOffset, compressed, method),
      });
    }
    return out;
  } finally {
    await handle.close();
  }
}

async function* zipMember(path: string, localOffset: number, compressed: number, method: number): AsyncIterable<Buffer> {
  const handle = await fs.open(path, 'r');
  const header = Buffer.alloc(30);
  try {
    await handle.read(header, 0, 30, localOffset);
  } finally {
    await handle.close();
  }
  const start = localOffset + 30 + header.readUInt16LE(26) + header.readUInt16LE(28);
  if (compressed === 0) return;
  const raw = createReadStream(path, { start, end: start + compressed - 1 });
  yield* method === 8 ? raw.pipe(createInflateRaw()) : raw;
}

/**
 * The rows of an RF2 file: tab-separated fields, the header row first; `onBytes` gets the bytes
 * read so far (for a progress bar).
 */
export async function* rf2Rows(file: Rf2File, onBytes?: (bytes: number) => void): AsyncIterable<string[]> {
  let rest = '';
  let bytes = 0;
  const decoder = new StringDecoder('utf8'); // a character split between chunks stays whole
  for await (const chunk of file.open()) {
    bytes += chunk.length;
    const text = rest + decoder.write(chunk);
    const lines = text.split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) {
      const l = line.endsWith('\r') ? line.slice(0, -1) : line;
      if (l !== '') yield l.split('\t');
    }
    onBytes?.(bytes);
  }
  rest += decoder.end();
  const last = rest.endsWith('\r') ? rest.slice(0, -1) : rest;
  if (last !== '') yield last.split('\t');
}
