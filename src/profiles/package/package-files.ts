import { createReadStream, existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { createGunzip } from 'node:zlib';
import { extract } from 'tar-stream';
import { PackageError } from './package-error.js';

/**
 * Bounds on one package (docs/profiles.md#package-bounds): entries of the archive or folder,
 * bytes of one file, and bytes inflated in all — a package is read whole in two passes, so a
 * gzip bomb or an archive of millions of entries stops at these instead of filling memory.
 */
export const PACKAGE_LIMITS = { maxEntries: 50_000, maxFileBytes: 64 * 1024 * 1024, maxTotalBytes: 1024 * 1024 * 1024 };

/** One file of a package: its name inside the package (`package/StructureDefinition-x.json`) and content. */
export interface PackageFile {
  name: string;
  data: Buffer;
}

/**
 * The files of a FHIR NPM package (`.tgz`, or a folder holding `package/`, or the `package`
 * folder itself), names relative to the package root with `/`. `wanted` picks the files whose
 * content is read (others are counted and passed over, unread). Streamed: one file in memory
 * at a time.
 */
export async function* packageFiles(path: string, wanted: (name: string) => boolean): AsyncGenerator<PackageFile> {
  if (!existsSync(path)) throw new PackageError(`${path}: no such file or folder`);
  if (statSync(path).isDirectory()) {
    yield* folderFiles(path, wanted);
    return;
  }
  yield* archiveFiles(path, wanted);
}

async function* archiveFiles(path: string, wanted: (name: string) => boolean): AsyncGenerator<PackageFile> {
  const tar = extract();
  const gunzip = createGunzip();
  const source = createReadStream(path);
  let total = 0;
  let entries = 0;
  const failed = (err: Error) => tar.destroy(err);
  source.on('error', failed);
  gunzip.on('error', (err) => failed(new PackageError(`${path}: not a gzip-compressed tar archive (${err.message})`)));
  source.pipe(gunzip).pipe(tar);
  try {
    for await (const entry of tar) {
      const name = entry.header.name.replace(/^\.\//, '');
      if (++entries > PACKAGE_LIMITS.maxEntries) throw new PackageError(`${path}: more than ${PACKAGE_LIMITS.maxEntries} entries`);
      if (entry.header.type !== 'file' || !wanted(name)) {
        entry.resume();
        total += entry.header.size;
        if (total > PACKAGE_LIMITS.maxTotalBytes) throw tooLarge(path);
        continue;
      }
      if (entry.header.size > PACKAGE_LIMITS.maxFileBytes) throw fileTooLarge(path, name);
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of entry as AsyncIterable<Buffer>) {
        size += chunk.length;
        total += chunk.length;
        if (size > PACKAGE_LIMITS.maxFileBytes) throw fileTooLarge(path, name);
        if (total > PACKAGE_LIMITS.maxTotalBytes) throw tooLarge(path);
        chunks.push(chunk);
      }
      yield { name, data: Buffer.concat(chunks) };
    }
  } catch (err) {
    if (err instanceof PackageError) throw err;
    throw new PackageError(`${path}: not a readable package archive (${(err as Error).message})`);
  } finally {
    source.destroy();
    gunzip.destroy();
    tar.destroy();
  }
}

function* folderFiles(root: string, wanted: (name: string) => boolean): Generator<PackageFile> {
  // A folder holding `package/` (as unpacked), or the `package` folder itself.
  const base = existsSync(join(root, 'package', 'package.json')) ? root : undefined;
  let entries = 0;
  let total = 0;
  const walk = function* (dir: string): Generator<PackageFile> {
    for (const item of readdirSync(dir, { withFileTypes: true })) {
      if (++entries > PACKAGE_LIMITS.maxEntries) throw new PackageError(`${root}: more than ${PACKAGE_LIMITS.maxEntries} entries`);
      const full = join(dir, item.name);
      if (item.isDirectory()) {
        yield* walk(full);
        continue;
      }
      if (!item.isFile()) continue;
      const name = base ? relative(base, full).split(sep).join('/') : `package/${relative(root, full).split(sep).join('/')}`;
      if (!wanted(name)) continue;
      const size = statSync(full).size;
      if (size > PACKAGE_LIMITS.maxFileBytes) throw fileTooLarge(root, name);
      total += size;
      if (total > PACKAGE_LIMITS.maxTotalBytes) throw tooLarge(root);
      yield { name, data: readFileSync(full) };
    }
  };
  yield* walk(root);
}

function fileTooLarge(path: string, name: string): PackageError {
  return new PackageError(`${path}: ${name} is larger than ${PACKAGE_LIMITS.maxFileBytes} bytes`);
}

function tooLarge(path: string): PackageError {
  return new PackageError(`${path}: more than ${PACKAGE_LIMITS.maxTotalBytes} bytes inflated`);
}
