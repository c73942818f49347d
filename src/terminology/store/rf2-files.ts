import { createReadStream, promises as fs } from 'node:fs';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { zipEntries, zipEntryStream, type ZipEntry } from './zip.js';

/**
 * The files of an RF2 release (docs/terminology.md#snomed-ct), in a folder (searched
 * recursively) or a `.zip` (read in place: each member is streamed from its offset and
 * inflated, nothing is extracted). Snapshot files are used; for a kind of file the release has
 * only in its Full form, the Full files reduced to their snapshot (the newest row of each id).
 * Each is read as a stream of tab-separated rows, the header row first.
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
  /** A Full file: every version of every row, reduced to the newest of each id when read. */
  full?: boolean;
  /** The file's lines, as read. */
  open(): AsyncIterable<Buffer>;
}

/** The kind of an RF2 file by its name; undefined for anything not used (Delta files, stated relationships, readmes). */
export function rf2Kind(path: string): Rf2Kind | undefined {
  const name = path.split('/').pop() ?? '';
  if (!/\.txt$/i.test(name) || !/Snapshot|Full/.test(name)) return undefined;
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

/** Whether a file name is a Full file (else a Snapshot one). */
function isFull(name: string): boolean {
  return !/Snapshot/.test(name.split('/').pop() ?? '');
}

/**
 * The RF2 files of a folder or zip: the Snapshot files, and the Full files of the kinds that
 * have no Snapshot file (to be reduced to their snapshot when read).
 */
export async function rf2Files(path: string): Promise<Rf2File[]> {
  const stat = await fs.stat(path);
  const found = stat.isDirectory() ? await folderFiles(path) : await zipFiles(path);
  const withSnapshot = new Set(found.filter((f) => !isFull(f.name)).map((f) => f.kind));
  const files = found.filter((f) => !isFull(f.name) || !withSnapshot.has(f.kind)).map((f) => (isFull(f.name) ? { ...f, full: true } : f));
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

/** The RF2 members of a zip archive, read in place by zip.ts. */
async function zipFiles(path: string): Promise<Rf2File[]> {
  let entries: ZipEntry[];
  try {
    entries = await zipEntries(path);
  } catch (err) {
    if (err instanceof Error && err.message === `${path} is not a ZIP archive`) throw new Error(`${path} is neither a folder nor a zip archive`);
    throw err;
  }
  const out: Rf2File[] = [];
  for (const entry of entries) {
    const kind = rf2Kind(entry.name);
    if (kind) out.push({ kind, name: entry.name, size: entry.size, open: () => zipMember(path, entry) });
  }
  return out;
}

async function* zipMember(path: string, entry: ZipEntry): AsyncIterable<Buffer> {
  yield* (await zipEntryStream(path, entry)) as AsyncIterable<Buffer>;
}

/**
 * The rows of an RF2 file: tab-separated fields, the header row first; `onBytes` gets the bytes
 * read so far (for a progress bar). A Full file is read twice: first for the newest effective
 * time of each id (the first column), then keeping the row of that time (the last one, if a
 * release repeats one) — the snapshot the release would have; its ids are what it keeps in
 * memory.
 */
export async function* rf2Rows(file: Rf2File, onBytes?: (bytes: number) => void): AsyncIterable<string[]> {
  if (!file.full) {
    yield* lines(file, onBytes);
    return;
  }
  const half = (offset: number) => (bytes: number) => onBytes?.(Math.floor(offset + bytes / 2));
  // The newest effective time of each id, and which row has it (a later row of the same time wins).
  const newest = new Map<string, string>();
  const chosen = new Map<string, number>();
  let index = 0;
  for await (const row of lines(file, half(0))) {
    const [id, time] = row;
    if (index > 0 && time >= (newest.get(id) ?? '')) {
      newest.set(id, time);
      chosen.set(id, index);
    }
    index++;
  }
  newest.clear();
  index = 0;
  for await (const row of lines(file, half(file.size / 2))) {
    if (index === 0 || chosen.get(row[0]) === index) yield row;
    index++;
  }
}

async function* lines(file: Rf2File, onBytes?: (bytes: number) => void): AsyncIterable<string[]> {
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
