import { AsciiText, type PartSource, type SnapshotParts } from './snapshot-format.js';

/**
 * Columns of an in-memory index without an object per row (docs/terminology.md#in-memory-index):
 * a text column is one string and the end offset of each value; a pooled column the distinct
 * values and an index into them; a code table an open-addressing hash table of ids. They are
 * what a persisted index is made of (snapshot-format.ts), so reading one back creates a string
 * per column and typed arrays, not millions of small objects for every GC to mark.
 */

/**
 * Strings as one text: value `i` is `text.slice(end(i - 1), end(i))`; an absent one's end is
 * stored as `~end`. Opened from a snapshot, an all-ASCII text may stay its bytes (AsciiText:
 * each value read from them, no decoding of the whole at open) until `decode` makes it one
 * string — the same values either way.
 */
export class TextColumn {
  private constructor(
    private text: string | undefined,
    /** `ends[0] = 0`; `ends[i + 1]` the end of value `i` (`~end` when absent). */
    readonly ends: Int32Array,
    private ascii?: Buffer,
  ) {}

  static of(values: ArrayLike<string | undefined>): TextColumn {
    const builder = new TextColumnBuilder();
    for (let i = 0; i < values.length; i++) builder.add(values[i]);
    return builder.finish();
  }

  /** A column of `text` cut at `ends` (as TextColumnBuilder makes them). */
  static fromText(text: string, ends: Int32Array): TextColumn {
    return new TextColumn(text, ends);
  }

  get length(): number {
    return this.ends.length - 1;
  }

  private start(i: number): number {
    const s = this.ends[i];
    return s < 0 ? ~s : s;
  }

  private slice(from: number, to: number): string {
    return this.text !== undefined ? this.text.slice(from, to) : (this.ascii as Buffer).toString('latin1', from, to);
  }

  get(i: number): string | undefined {
    const e = this.ends[i + 1];
    if (e < 0) return undefined;
    return this.slice(this.start(i), e);
  }

  /** The value, `''` when absent. */
  text0(i: number): string {
    const e = this.ends[i + 1];
    return e < 0 ? '' : this.slice(this.start(i), e);
  }

  /** Whether value `i` is `s` (no string made). */
  equals(i: number, s: string): boolean {
    const e = this.ends[i + 1];
    if (e < 0) return false;
    const start = this.start(i);
    if (e - start !== s.length) return false;
    if (this.text !== undefined) return this.text.startsWith(s, start);
    const bytes = this.ascii as Buffer;
    for (let k = 0; k < s.length; k++) if (bytes[start + k] !== s.charCodeAt(k)) return false;
    return true;
  }

  /** Hash of value `i` (same as `hashText` of the value). */
  hash(i: number): number {
    const e = this.ends[i + 1];
    const to = e < 0 ? ~e : e;
    if (this.text !== undefined) return hashText(this.text, this.start(i), to);
    const bytes = this.ascii as Buffer;
    let h = 0x811c9dc5 | 0;
    for (let k = this.start(i); k < to; k++) h = Math.imul(h ^ bytes[k], 0x01000193);
    return h;
  }

  /** Kept as ASCII bytes (opened from a snapshot, not decoded yet). */
  get undecoded(): boolean {
    return this.text === undefined;
  }

  /** Makes bytes kept as they were read one string (reading a value then slices it). */
  decode(): void {
    if (this.text !== undefined) return;
    this.text = (this.ascii as Buffer).toString('latin1');
    this.ascii = undefined;
  }

  save(parts: SnapshotParts, name: string): void {
    parts.set(`${name}.text`, this.text ?? (this.ascii as Buffer).toString('latin1'));
    parts.set(`${name}.ends`, this.ends);
  }

  static load(parts: PartSource, name: string): TextColumn {
    // A part is taken once (a file copy hands each over once: snapshot-file.ts).
    const text = parts.get(`${name}.text`);
    if (text instanceof AsciiText) return new TextColumn(undefined, intPart(parts, `${name}.ends`), text.bytes);
    if (typeof text !== 'string') throw new TypeError(`snapshot part ${name}.text is missing`);
    return new TextColumn(text, intPart(parts, `${name}.ends`));
  }

  get bytes(): number {
    return (this.text !== undefined ? this.text.length * 2 : (this.ascii as Buffer).length) + this.ends.byteLength;
  }
}

/** A growable Int32Array (doubling): what builders append to before the array's final length is known. */
export class IntBuffer {
  private data: Int32Array;
  length = 0;

  constructor(capacity = 1024) {
    this.data = new Int32Array(Math.max(16, capacity));
  }

  push(v: number): void {
    if (this.length === this.data.length) {
      const bigger = new Int32Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.length++] = v;
  }

  /** The values as an array of their exact length (a copy: the buffer's spare room is let go). */
  finish(): Int32Array {
    return this.data.slice(0, this.length);
  }
}

/**
 * A text column appended to value by value (what `TextColumn.of` runs over an array; an index
 * build appends rows as they are read, without an array of every value first): values are joined into one string every few thousand, so the strings a database
 * result was parsed into are let go as the rows are read, not when the last is.
 */
export class TextColumnBuilder {
  private readonly ends = new IntBuffer();
  private pieces: string[] = [];
  private readonly joined: string[] = [];
  private at = 0;

  constructor() {
    this.ends.push(0);
  }

  add(v: string | undefined): void {
    if (v !== undefined) {
      this.pieces.push(v);
      this.at += v.length;
      if (this.pieces.length === 4096) this.flush();
    }
    this.ends.push(v === undefined ? ~this.at : this.at);
  }

  private flush(): void {
    if (this.pieces.length === 0) return;
    this.joined.push(this.pieces.join(''));
    this.pieces = [];
  }

  finish(): TextColumn {
    this.flush();
    return TextColumn.fromText(this.joined.join(''), this.ends.finish());
  }
}

/**
 * A pooled column appended to row by row. Values are told apart by `key` (default: the value
 * itself, SameValueZero), the first value of each key kept.
 */
export class PooledColumnBuilder<T> {
  private readonly seen = new Map<unknown, number>();
  private readonly values: T[] = [];
  private readonly at = new IntBuffer();

  constructor(private readonly key: (v: T) => unknown = (v) => v) {}

  add(v: T): void {
    const key = this.key(v);
    let k = this.seen.get(key);
    if (k === undefined) {
      k = this.values.length;
      this.values.push(v);
      this.seen.set(key, k);
    }
    this.at.push(k);
  }

  finish(): PooledColumn<T> {
    const at = this.at.finish();
    return PooledColumn.fromValues(this.values, this.values.length <= 256 ? Uint8Array.from(at) : at);
  }
}

/** Few distinct values (languages, use codings, property codes): the values once, and an index per row. */
export class PooledColumn<T> {
  private constructor(
    readonly values: T[],
    /** Bytes when there are at most 256 values (a quarter of the memory, and of a snapshot's reading). */
    readonly at: Int32Array | Uint8Array,
  ) {}

  /** A column of `values` indexed by `at` (as PooledColumnBuilder makes them). */
  static fromValues<T>(values: T[], at: Int32Array | Uint8Array): PooledColumn<T> {
    return new PooledColumn(values, at);
  }

  get(i: number): T {
    return this.values[this.at[i]];
  }

  /** The distinct values are saved as JSON (`undefined` as null). */
  save(parts: SnapshotParts, name: string): void {
    parts.set(`${name}.values`, JSON.stringify(this.values.map((v) => v ?? null)));
    parts.set(`${name}.at`, this.values.length <= 256 && this.at instanceof Int32Array ? Uint8Array.from(this.at) : this.at);
  }

  static load<T>(parts: PartSource, name: string): PooledColumn<T> {
    const values = (JSON.parse(textPart(parts, `${name}.values`)) as unknown[]).map((v) => (v === null ? undefined : v)) as T[];
    const at = parts.get(`${name}.at`);
    if (!(at instanceof Int32Array || at instanceof Uint8Array)) throw new TypeError(`snapshot part ${name}.at is missing`);
    return new PooledColumn(values, at);
  }

  get bytes(): number {
    return this.at.byteLength + this.values.length * 64;
  }
}

/** FNV-1a over UTF-16 code units `from..to` of `s`. */
export function hashText(s: string, from: number, to: number): number {
  let h = 0x811c9dc5 | 0;
  for (let i = from; i < to; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h;
}

/** Ids by code: open addressing over a power-of-two table; the lowest id of equal codes wins. */
export class CodeTable {
  private constructor(private readonly slots: Int32Array) {}

  /** The table of the present ids (`present(id)`) of `codes`, ids ascending. */
  static of(codes: TextColumn, maxId: number, present: (id: number) => boolean): CodeTable {
    let size = 16;
    while (size < maxId * 2) size *= 2;
    const slots = new Int32Array(size);
    const mask = size - 1;
    for (let id = 1; id <= maxId; id++) {
      if (!present(id)) continue;
      let s = codes.hash(id) & mask;
      let duplicate = false;
      for (; slots[s] !== 0; s = (s + 1) & mask) {
        const other = slots[s];
        if (codes.equals(other, codes.text0(id))) {
          duplicate = true;
          break;
        }
      }
      if (!duplicate) slots[s] = id;
    }
    return new CodeTable(slots);
  }

  static load(parts: PartSource, name: string): CodeTable {
    return new CodeTable(intPart(parts, name));
  }

  save(parts: SnapshotParts, name: string): void {
    parts.set(name, this.slots);
  }

  find(codes: TextColumn, code: string): number {
    const mask = this.slots.length - 1;
    for (let s = hashText(code, 0, code.length) & mask; ; s = (s + 1) & mask) {
      const id = this.slots[s];
      if (id === 0) return 0;
      if (codes.equals(id, code)) return id;
    }
  }

  get bytes(): number {
    return this.slots.byteLength;
  }
}

export function intPart(parts: PartSource, name: string): Int32Array {
  const p = parts.get(name);
  if (!(p instanceof Int32Array)) throw new TypeError(`snapshot part ${name} is missing`);
  return p;
}

export function bytePart(parts: PartSource, name: string): Uint8Array {
  const p = parts.get(name);
  if (!(p instanceof Uint8Array)) throw new TypeError(`snapshot part ${name} is missing`);
  return p;
}

export function textPart(parts: PartSource, name: string): string {
  const p = parts.get(name);
  if (p instanceof AsciiText) return p.toString();
  if (typeof p !== 'string') throw new TypeError(`snapshot part ${name} is missing`);
  return p;
}

/**
 * Columns made when first needed — a persisted index's large parts are read from its snapshot
 * only when a question needs them (index-snapshot.ts) — or at hand from the start.
 */
export class Lazy<T> {
  private constructor(
    private value: T | undefined,
    private load: (() => T) | undefined,
    /** What the columns take in memory (an estimate, for the cache budget). */
    readonly bytes: number,
  ) {}

  static of<T extends object>(value: T): Lazy<T> {
    return new Lazy(value, undefined, columnBytes(value));
  }

  static from<T>(load: () => T, bytes: number): Lazy<T> {
    return new Lazy<T>(undefined, load, bytes);
  }

  get(): T {
    if (this.value === undefined) {
      this.value = (this.load as () => T)();
      this.load = undefined;
      this.background = undefined;
    }
    return this.value;
  }

  /** The background read of the columns' parts (index-cache.ts), which `ready` waits for rather than reading them again. */
  private background: Promise<unknown> | undefined;

  readInBackground(read: Promise<unknown>): void {
    if (this.value === undefined) this.background = read;
  }

  /**
   * The columns, once read: after the background read when one runs (its failure is the
   * background's to report: the columns are then read here, and a part that is not what was
   * written throws), else read now.
   */
  async ready(): Promise<T> {
    if (this.value === undefined && this.background) await this.background.catch(() => undefined);
    return this.get();
  }

  get loaded(): boolean {
    return this.value !== undefined;
  }
}

/** Estimated bytes of an object of columns and typed arrays. */
function columnBytes(value: object): number {
  let n = 0;
  for (const v of Object.values(value)) {
    if (ArrayBuffer.isView(v)) n += v.byteLength;
    else if (v instanceof TextColumn || v instanceof PooledColumn) n += v.bytes;
  }
  return n;
}
