import { createReadStream, promises as fs } from 'node:fs';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { zipEntries, zipEntryStream, type ZipEntry } from './zip.js';

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
