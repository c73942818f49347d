import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** The lock file inside an embedded data folder: the owner's PID. */
const LOCK_FILE = 'lattice.pid';

/**
 * One owner per embedded data folder (docs/errors.md#data-folder): PGlite is one process's
 * database, and a second process writing the same files corrupts them. The first opener
 * creates `lattice.pid` atomically (O_EXCL); a second is refused with an error naming the
 * owner's PID. A lock left by a process that no longer runs (kill -9, power loss) is stale and
 * taken over. Returns the release function.
 */
export function lockDataFolder(dataDir: string): () => void {
  const path = join(dataDir, LOCK_FILE);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(path, 'wx');
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      return () => release(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const owner = ownerOf(path);
    if (owner !== undefined && isRunning(owner)) {
      throw new DataFolderInUse(dataDir, owner);
    }
    rmSync(path, { force: true }); // stale (or unreadable, half-written): take it over
  }
  throw new Error(`Could not lock the data folder ${dataDir}`);
}

/** Another process (or this one, through another open) owns the folder. */
export class DataFolderInUse extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(
      `The data folder ${dataDir} is in use by process ${pid}` +
        (pid === process.pid ? ' (this process)' : '') +
        ': one Lattice process may open an embedded database at a time. Stop that process first, ' +
        'or run the server on PostgreSQL (DATABASE_URL) to share the data between processes.',
    );
    this.name = 'DataFolderInUse';
  }
}

function ownerOf(path: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(path, 'utf8').trim(), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function isRunning(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // exists, owned by another user
  }
}

function release(path: string): void {
  if (ownerOf(path) === process.pid) rmSync(path, { force: true });
}
