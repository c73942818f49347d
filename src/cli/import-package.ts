import type { Resource } from '@medplum/fhirtypes';
import { BulkLoadError, storedNote, type SystemRepository } from '../core/repository.js';
import { FhirError } from '../fhir/outcome.js';
import { PackageError } from '../profiles/package/package-error.js';
import { validateResource } from '../fhir/validation/validate-resource.js';
import { packagesInOrder } from '../profiles/package/dependencies.js';
import { placeId } from '../profiles/package/place-id.js';
import { packageResources, type PackageManifest } from '../profiles/package/read-package.js';
import { importEvents, type ImportSummary } from '../terminology/store/import-file.js';
import type { JsonStreamEvent } from '../terminology/store/json-stream.js';
import type { TerminologyEnv } from '../terminology/types.js';

export interface PackageImportOptions {
  /** Owner of the loaded resources; shared content when absent. */
  projectId?: string;
  /** Folders where dependencies are looked for (`--package-dir`), before the package's own folder. */
  packageDirs: string[];
  /** Resources per batch of the bulk load. */
  batchSize: number;
  /** Lines of the summary (stdout) and warnings (stderr). */
  out: (line: string) => void;
  warn: (line: string) => void;
}

/**
 * `lattice import --format package <file.tgz|folder>` (docs/profiles.md#packages): loads an
 * implementation guide's package — its dependencies first, where they are held locally — as
 * the import of a file loads resources: terminology through the terminology import, every
 * other definition through the bulk load, as shared content unless a project is named. Prints
 * what each package needs and where its dependencies came from; a dependency not found is a
 * warning line. Throws PackageError (naming the file) for a package it cannot read, and what
 * the imports throw.
 */
export async function importPackage(path: string, app: TerminologyEnv & { system: SystemRepository }, options: PackageImportOptions): Promise<ImportSummary[]> {
  const { packages, notes } = await packagesInOrder(path, options.packageDirs);
  for (const note of notes) {
    if (note.status === 'missing') {
      options.warn(
        `warning: dependency ${note.dependency} of ${note.of} not found (looked for ${note.dependency} and ${note.dependency.replace('#', '-')}.tgz ` +
          `in ${[...options.packageDirs, 'the folder of the package'].join(', ')}): the definitions it holds are missing`,
      );
    }
  }
  const summaries: ImportSummary[] = [];
  for (const manifest of packages) {
    const needs = notes.filter((n) => n.of === `${manifest.name}#${manifest.version}`);
    options.out(`package ${manifest.name}#${manifest.version}: dependencies ${needs.length === 0 ? 'none' : needs.map(describe).join(', ')}`);
    const loader = app.system.bulkLoad({ projectId: options.projectId, validate: validateResource, batchSize: options.batchSize });
    const at = { file: '' };
    try {
      const summary = await importEvents(events(manifest, app.system, at), app, {
        projectId: options.projectId,
        // A package holds definitions and terminology only (PACKAGE_RESOURCE_TYPES): shared on purpose.
        shared: options.projectId === undefined,
        other: (resource, where) => loader.add(resource, where),
        out: process.stderr,
      });
      summary.others = await loader.finish();
      summaries.push(summary);
      options.out(
        `package ${manifest.name}#${manifest.version}: imported ${summary.resources + summary.others} resources ` +
          `(${summary.codeSystems} CodeSystems, ${summary.valueSets} ValueSets, ${summary.others} other definitions) in ${(summary.ms / 1000).toFixed(1)} s`,
      );
    } catch (err) {
      await loader.settle();
      if (err instanceof PackageError) throw err;
      // A resource refused (the bulk load's check, the terminology import's, a write's): name its file.
      const text = err instanceof BulkLoadError ? err.message : `${at.file}: ${(err as Error).message}`;
      if (!(err instanceof BulkLoadError || err instanceof FhirError)) throw err;
      throw new PackageError(`${manifest.path}: ${text} (${storedNote(loader, "the package's earlier batches")})`);
    }
  }
  return summaries;
}

function describe(note: { dependency: string; status: string; path?: string }): string {
  return note.status === 'loaded' ? `${note.dependency} (loaded from ${note.path})` : `${note.dependency} (${note.status})`;
}

/** The package's resources as import events, each named by its file, its id placed (place-id.ts). */
async function* events(manifest: PackageManifest, system: SystemRepository, at: { file: string }): AsyncGenerator<JsonStreamEvent> {
  const read = (type: string, id: string) => system.read(type, id).then((r): Resource | undefined => r, () => undefined);
  let line = 0;
  for await (const { resource, file } of packageResources(manifest)) {
    at.file = file;
    const id = await placeId(resource, read);
    yield { kind: 'value', value: id ? { ...resource, id } : resource, bytes: 0, line: ++line, where: file };
  }
}
