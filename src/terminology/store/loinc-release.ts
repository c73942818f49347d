import { createReadStream, readdirSync, statSync } from 'node:fs';
import { basename, join, relative, sep } from 'node:path';
import { csvRecords } from './csv.js';
import { DEFAULT_MAX_LINE } from './release-file-error.js';
import { zipEntries, zipEntryStream } from './zip.js';

/**
 * The files of a LOINC release (docs/terminology.md#loinc), from its unpacked folder or its
 * .zip, found by their place in the release layout whatever folder they sit under
 * (`Loinc_2.82/LoincTable/Loinc.csv` and `LoincTable/Loinc.csv` alike). Each file is read as
 * a stream of CSV records; the bytes read so far are counted for the progress bar.
 */
export interface ReleaseFile {
  /** Path inside the release, `/`-separated. */
  name: string;
  size: number;
}

/** How many records between two calls of `onRows`. */
const ROWS_PER_TICK = 200_000;

export class LoincRelease {
  /** Bytes of the files read so far (of `totalBytes`). */
  bytesRead = 0;
  /** Called after every `ROWS_PER_TICK` records read (the loader collects garbage there). */
  onRows: (() => void) | undefined;
  private rows = 0;

  private constructor(
    readonly path: string,
    readonly files: ReleaseFile[],
    private readonly open: (f: ReleaseFile) => Promise<NodeJS.ReadableStream>,
    /** The longest row of a file (LATTICE_TX_IMPORT_MAX_LINE). */
    private readonly maxLine = DEFAULT_MAX_LINE,
  ) {}

  static async open(path: string, maxLine = DEFAULT_MAX_LINE): Promise<LoincRelease> {
    const st = statSync(path);
    if (st.isDirectory()) {
      const files = listFolder(path).map((name) => ({ name, size: statSync(join(path, name)).size }));
      return new LoincRelease(path, files, async (f) => createReadStream(join(path, f.name)), maxLine);
    }
    const entries = await zipEntries(path);
    const byName = new Map(entries.map((e) => [e.name, e]));
    return new LoincRelease(
      path,
      entries.map((e) => ({ name: e.name, size: e.size })),
      (f) => zipEntryStream(path, byName.get(f.name) as NonNullable<ReturnType<typeof byName.get>>),
      maxLine,
    );
  }

  /** The CSV files this loader reads, in bytes. */
  get totalBytes(): number {
    return this.files.filter((f) => f.name.toLowerCase().endsWith('.csv')).reduce((n, f) => n + f.size, 0);
  }

  /** The file whose path ends with `suffix` (case-insensitive), if the release has it. */
  find(suffix: string): ReleaseFile | undefined {
    const s = `/${suffix.toLowerCase()}`;
    return this.files.find((f) => `/${f.name.toLowerCase()}`.endsWith(s));
  }

  /** The files in folder `folder` (anywhere in the release) whose name matches `pattern`. */
  findAll(folder: string, pattern: RegExp): ReleaseFile[] {
    const f = folder.toLowerCase();
    return this.files.filter((file) => {
      const parts = file.name.split('/');
      return parts.length >= 2 && parts[parts.length - 2].toLowerCase() === f && pattern.test(parts[parts.length - 1]);
    });
  }

  /** The records of a CSV file (keyed by its header). */
  async *records(file: ReleaseFile): AsyncGenerator<Record<string, string>> {
    const stream = await this.open(file);
    const counted = async function* (this: LoincRelease) {
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        this.bytesRead += chunk.length;
        yield chunk;
      }
    }.call(this);
    for await (const r of csvRecords(counted, { name: file.name, maxLine: this.maxLine })) {
      if (++this.rows % ROWS_PER_TICK === 0) this.onRows?.();
      yield r;
    }
  }

  /**
   * The release version its name gives (`Loinc_2.82.zip`, a folder `Loinc_2.82` or `loinc-2.82`),
   * else undefined.
   */
  versionFromName(): string | undefined {
    const names = [basename(this.path), ...new Set(this.files.map((f) => f.name.split('/')[0]))];
    for (const n of names) {
      const m = /loinc[_\- ]?v?([0-9]+\.[0-9]+)/i.exec(n);
      if (m) return m[1];
    }
    return undefined;
  }
}

function listFolder(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) out.push(relative(root, full).split(sep).join('/'));
    }
  };
  walk(root);
  return out.sort();
}
