import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The project root (the folder with package.json), found from this file so the same code
 * works from `src/` (tsx) and from `dist/src/` (compiled). Non-TypeScript assets such as
 * migrations and OperationDefinition JSON are read from `src/` under it.
 */
export const projectRoot: string = (() => {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('package.json not found above ' + fileURLToPath(import.meta.url));
    dir = up;
  }
  return dir;
})();

/** Path of an asset under `src/` (e.g. `srcPath('storage', 'migrations')`). */
export function srcPath(...parts: string[]): string {
  return join(projectRoot, 'src', ...parts);
}
