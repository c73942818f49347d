import { readSync } from 'node:fs';
import { open, rm, type FileHandle } from 'node:fs/promises';
import { headBytes, partOf, partOfInSlices, partRange, snapshotLayout, SnapshotUnreadable, type PartEntry, type PartSource, type SnapshotLayout, type SnapshotPart } from './snapshot-format.js';

/**
 * A snapshot's file copy read part by part (docs/terminology.md#persisted-indexes): opening it
 * reads only its head, checked against the database's header (size and CRC-32 of the head,
 * which lists each part's CRC-32); each part is read when first asked for — in the background
 * (`prefetch`), or at once (`get`, synchronously: a question that needs a part before the
 * background read has it) — and checked against its own CRC-32. A numeric part is a view over
 * a buffer holding only its bytes: nothing is copied, and nothing is read that no question
 * needs yet.
 */
export class SnapshotFile implements PartSource {
  private readonly ready = new Map<string, SnapshotPart>();
  private closed = false;

  private constructor(
    private readonly handle: FileHandle,
    readonly layout: SnapshotLayout,
    /** Its path. */
    readonly path: string,
  ) {}

  /** The file when it is the snapshot of `bytes` bytes whose head's CRC-32 is `crc`; else undefined (nothing is kept open). */
  static async open(file: string, bytes: number, crc: number): Promise<SnapshotFile | undefined> {
    const handle = await open(file, 'r').catch(() => undefined);
    if (!handle) return undefined;
    try {
      if ((await handle.stat()).size !== bytes || bytes < 8) throw new SnapshotUnreadable('size');
      const length = headBytes(await readAt(handle, 0, 4));
      if (length > bytes) throw new SnapshotUnreadable('truncated header');
      return new SnapshotFile(handle, snapshotLayout(await readAt(handle, 0, length), bytes, crc), file);
    } catch {
      await handle.close();
      return undefined; // not this snapshot: the database's copy is read (and the file written again)
    }
  }

  /** Part `name` (read now unless the background read has it); throws SnapshotUnreadable when its bytes are not the ones written. */
  get(name: string): SnapshotPart | undefined {
    const p = this.layout.entries.get(name);
    if (!p) return undefined;
    const ready = this.ready.get(name);
    if (ready !== undefined) {
      this.ready.delete(name);
      return ready;
    }
    if (this.closed) throw new SnapshotUnreadable(`part ${name} asked for after the file was closed`);
    const { at, bytes } = partRange(this.layout, p);
    const out = uninitialised(bytes);
    for (let done = 0; done < bytes; ) {
      const n = readSync(this.handle.fd, out, done, bytes - done, at + done);
      if (n === 0) throw new SnapshotUnreadable(`part ${name} is truncated`);
      done += n;
    }
    return partOf(p, out);
  }

  /**
   * Reads parts in the background, one after the other, for `get` to take. `asciiAsBytes`: a
   * text part that is all ASCII is kept as its bytes (AsciiText), not decoded.
   */
  async prefetch(names: string[], asciiAsBytes = false): Promise<void> {
    for (const name of names) {
      const p = this.layout.entries.get(name);
      if (!p || this.ready.has(name) || this.closed) continue;
      this.ready.set(name, await this.read(p, asciiAsBytes));
    }
  }

  private async read(p: PartEntry, asciiAsBytes: boolean): Promise<SnapshotPart> {
    const { at, bytes } = partRange(this.layout, p);
    return partOfInSlices(p, await readAt(this.handle, at, bytes), asciiAsBytes);
  }

  /** Bytes parts take in memory once read (texts as UTF-16 at most). */
  bytes(names: string[]): number {
    let n = 0;
    for (const name of names) {
      const p = this.layout.entries.get(name);
      if (p) n += p.kind === 'i32' ? p.length * 4 : p.kind === 'u8' ? p.length : p.length * 2;
    }
    return n;
  }

  /** Closes the file (parts not yet taken are dropped). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.ready.clear();
    await this.handle.close();
  }

  /**
   * Removes the file (a part of it was not what its head says: the next read takes the
   * database's copy and writes it again). Questions already answering from it may still read
   * its other parts: it is closed a minute later.
   */
  async discard(): Promise<void> {
    await rm(this.path, { force: true });
    setTimeout(() => void this.close().catch(() => undefined), 60_000).unref();
  }
}

/** `length` bytes of a file from `position`, in a buffer of their own. */
async function readAt(handle: FileHandle, position: number, length: number): Promise<Uint8Array> {
  const out = uninitialised(length);
  for (let done = 0; done < length; ) {
    const { bytesRead } = await handle.read(out, done, length - done, position + done);
    if (bytesRead === 0) throw new SnapshotUnreadable('truncated file');
    done += bytesRead;
  }
  return out;
}

/**
 * `length` bytes of memory of their own, not zeroed (every byte is read into before use): zeroing
 * the tens of MB of a large part took as long as reading them.
 */
function uninitialised(length: number): Uint8Array {
  const b = Buffer.allocUnsafeSlow(length);
  return new Uint8Array(b.buffer, b.byteOffset, length);
}
