import { createReadStream, promises as fs } from 'node:fs';
import { join } from 'node:path';
import { isUtf8 } from 'node:buffer';
import { DEFAULT_MAX_LINE, lineTooLong, ReleaseFileError } from './release-file-error.js';
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

/** How rows are read: the bound on a line, and where the last row yielded was (for messages). */
export interface Rf2ReadOptions {
  /** Bytes (LATTICE_TX_IMPORT_MAX_LINE); DEFAULT_MAX_LINE when absent. */
  maxLine?: number;
  /** Set to the line number of each row before it is yielded. */
  position?: { line: number };
}

/**
 * The rows of an RF2 file: tab-separated fields, the header row first; `onBytes` gets the bytes
 * read so far (for a progress bar). Every row has the header's number of columns, no NUL byte
 * and valid UTF-8, and no line is longer than the bound, else a ReleaseFileError naming the
 * file and line (a file cut short ends in a row with too few columns). A Full file is read
 * twice: first for the newest effective time of each id (the first column), then keeping the
 * row of that time (the last one, if a release repeats one) — the snapshot the release would
 * have; its ids are what it keeps in memory.
 */
export async function* rf2Rows(file: Rf2File, onBytes?: (bytes: number) => void, options: Rf2ReadOptions = {}): AsyncIterable<string[]> {
  if (!file.full) {
    yield* lines(file, onBytes, options);
    return;
  }
  const half = (offset: number) => (bytes: number) => onBytes?.(Math.floor(offset + bytes / 2));
  // The newest effective time of each id, and which row has it (a later row of the same time wins).
  const newest = new Map<string, string>();
  const chosen = new Map<string, number>();
  let index = 0;
  for await (const row of lines(file, half(0), { maxLine: options.maxLine })) {
    const [id, time] = row;
    if (index > 0 && time >= (newest.get(id) ?? '')) {
      newest.set(id, time);
      chosen.set(id, index);
    }
    index++;
  }
  newest.clear();
  index = 0;
  for await (const row of lines(file, half(file.size / 2), options)) {
    if (index === 0 || chosen.get(row[0]) === index) yield row;
    index++;
  }
}

/**
 * The rows of a file, split at line feeds as the bytes arrive: each byte is looked at once (a
 * line spread over many chunks is joined once, when it ends), and a line is refused as soon as
 * it passes the bound.
 */
async function* lines(file: Rf2File, onBytes: ((bytes: number) => void) | undefined, options: Rf2ReadOptions): AsyncIterable<string[]> {
  const maxLine = options.maxLine ?? DEFAULT_MAX_LINE;
  let parts: Buffer[] = [];
  let partial = 0; // bytes of the line begun in earlier chunks
  let line = 0;
  let bytes = 0;
  let columns = -1;
  const row = (bytes: Buffer): string[] | undefined => {
    line++;
    if (bytes.length > maxLine) throw lineTooLong(file.name, line, maxLine);
    const end = bytes.length > 0 && bytes[bytes.length - 1] === 13 ? bytes.length - 1 : bytes.length;
    if (end === 0) return undefined;
    const content = bytes.subarray(0, end);
    if (content.indexOf(0) >= 0) throw new ReleaseFileError(file.name, line, 'the line holds a NUL byte');
    if (!isUtf8(content)) throw new ReleaseFileError(file.name, line, 'the line is not valid UTF-8');
    const fields = content.toString('utf8').split('\t');
    if (columns < 0) columns = fields.length;
    else if (fields.length !== columns) throw new ReleaseFileError(file.name, line, `${fields.length} columns where the header has ${columns} (is the file cut short?)`);
    if (options.position) options.position.line = line;
    return fields;
  };
  for await (const chunk of file.open()) {
    bytes += chunk.length;
    let start = 0;
    for (let eol = chunk.indexOf(10); eol >= 0; eol = chunk.indexOf(10, start)) {
      let whole = chunk.subarray(start, eol);
      if (partial > 0) {
        parts.push(whole);
        whole = Buffer.concat(parts, partial + whole.length);
        parts = [];
        partial = 0;
      }
      const fields = row(whole);
      if (fields) yield fields;
      start = eol + 1;
    }
    if (start < chunk.length) {
      parts.push(Buffer.from(chunk.subarray(start)));
      partial += chunk.length - start;
      if (partial > maxLine) throw lineTooLong(file.name, line + 1, maxLine);
    }
    onBytes?.(bytes);
  }
  if (partial > 0) {
    const fields = row(Buffer.concat(parts, partial));
    if (fields) yield fields;
  }
}
