import { createWriteStream, promises as fs } from 'node:fs';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import { badRequest } from '../../fhir/outcome.js';
import type { ProgressBar } from './import-file.js';
import { rf2Files, rf2Kind } from './rf2-files.js';

/**
 * An RF2 release sent to a running server (`lattice import --format rf2 … --url`,
 * docs/terminology.md#import-into-a-running-server): the Snapshot files the loader reads, one
 * after the other, each as a header line `<bytes> <file name>\n` followed by its bytes
 * (uncompressed; a zip member is inflated while it is sent). The server writes them into a
 * folder of its own and loads that folder as the direct mode loads one; nothing is held in
 * memory on either side.
 */

/** The framed files of the release at `path` (folder or zip), with progress in bytes sent. */
export async function* rf2Upload(path: string, bar: ProgressBar): AsyncIterable<Buffer> {
  const files = await rf2Files(path);
  const total = files.reduce((n, f) => n + f.size, 0);
  let sent = 0;
  for (const file of files) {
    yield Buffer.from(`${file.size} ${file.name.split('/').pop() ?? file.name}\n`);
    let written = 0;
    for await (const chunk of file.open()) {
      written += chunk.length;
      sent += chunk.length;
      bar(path, sent, total, 'bytes sent');
      yield chunk;
    }
    if (written !== file.size) throw new Error(`${file.name}: read ${written} bytes, expected ${file.size}`);
  }
  bar.done();
}

/** Header lines are short: a size and a file name. */
const MAX_HEADER = 1024;

/**
 * Writes the framed files of `body` into `dir` (file i as `<dir>/<i>/<name>`); a body that is
 * not such a stream, or names a file the loader does not read, is a 400.
 */
export async function receiveRf2(body: AsyncIterable<Buffer>, dir: string): Promise<void> {
  let pending: Buffer = Buffer.alloc(0);
  let current: { out: ReturnType<typeof createWriteStream>; left: number } | undefined;
  let count = 0;
  const close = async () => {
    if (!current) return;
    current.out.end();
    await finished(current.out);
    current = undefined;
  };
  for await (const chunk of body) {
    pending = pending.length > 0 ? Buffer.concat([pending, chunk]) : chunk;
    while (pending.length > 0) {
      if (current) {
        const part = pending.subarray(0, current.left);
        current.left -= part.length;
        pending = pending.subarray(part.length);
        const out = current.out;
        if (!out.write(part)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
        if (current.left === 0) await close();
        continue;
      }
      const eol = pending.indexOf(10);
      if (eol < 0) {
        if (pending.length > MAX_HEADER) throw badRequest('Not an RF2 upload: a file header is missing');
        break;
      }
      const header = /^(\d{1,15}) ([^/\\\0]{1,255})$/.exec(pending.subarray(0, eol).toString('utf8'));
      if (!header || !rf2Kind(header[2]) || header[2].startsWith('.')) throw badRequest('Not an RF2 upload: a file header is malformed or names a file that is not an RF2 Snapshot file');
      pending = pending.subarray(eol + 1);
      const folder = join(dir, String(count++));
      await fs.mkdir(folder, { recursive: true });
      const out = createWriteStream(join(folder, header[2]));
      current = { out, left: Number(header[1]) };
      if (current.left === 0) await close();
    }
  }
  const truncated = current !== undefined || pending.length > 0;
  await close();
  if (truncated) throw badRequest('Not an RF2 upload: the content ends inside a file');
  if (count === 0) throw badRequest('No content to import');
}
