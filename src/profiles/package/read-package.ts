import type { Resource } from '@medplum/fhirtypes';
import { PackageError } from './package-error.js';
import { packageFiles } from './package-files.js';

/** What `package/package.json` says of a package. */
export interface PackageManifest {
  name: string;
  version: string;
  /** Package name → version. */
  dependencies: Record<string, string>;
  /** Where it was read from (a `.tgz` or a folder). */
  path: string;
}

/**
 * Resource types a package's resources are loaded of (docs/profiles.md#packages): its
 * definitions and terminology. Other resources (examples of clinical data) are passed over.
 */
export const PACKAGE_RESOURCE_TYPES: readonly string[] = [
  'StructureDefinition',
  'ValueSet',
  'CodeSystem',
  'SearchParameter',
  'CapabilityStatement',
  'OperationDefinition',
  'ConceptMap',
  'NamingSystem',
  'ImplementationGuide',
  'CompartmentDefinition',
  'StructureMap',
];

/** Reads `package/package.json` of the package at `path` (the first pass over it). */
export async function readManifest(path: string): Promise<PackageManifest> {
  for await (const file of packageFiles(path, (name) => name === 'package/package.json')) {
    const json = parseJson(path, file.name, file.data) as { name?: unknown; version?: unknown; dependencies?: unknown };
    if (typeof json.name !== 'string' || typeof json.version !== 'string') throw new PackageError(`${path}: ${file.name} has no name and version`);
    const deps = json.dependencies && typeof json.dependencies === 'object' ? (json.dependencies as Record<string, unknown>) : {};
    const dependencies = Object.fromEntries(Object.entries(deps).filter((e): e is [string, string] => typeof e[1] === 'string'));
    return { name: json.name, version: json.version, dependencies, path };
  }
  throw new PackageError(`${path}: not a FHIR package (no package/package.json)`);
}

/** One resource of a package, with the file it came from. */
export interface PackageResource {
  resource: Resource;
  file: string;
}

/** Counts of a package's files that were not loaded. */
export interface PassedOver {
  /** JSON files of resource types that are not loaded (examples of clinical data). */
  resources: number;
}

/**
 * The definition and terminology resources of a package (the second pass): every `.json` file
 * in `package/` but the package's own `package.json` and `.index.json`, and those in its
 * `package/example/` folder (other folders — `other/`, `openapi/` — hold no resources). A file
 * that is not JSON or not a resource stops the load, naming it.
 */
export async function* packageResources(manifest: PackageManifest, passed: PassedOver = { resources: 0 }): AsyncGenerator<PackageResource> {
  const wanted = (name: string) => /^package\/(examples?\/)?[^/]+\.json$/.test(name) && !/\/(package|\.index)\.json$/.test(name);
  for await (const file of packageFiles(manifest.path, wanted)) {
    const json = parseJson(manifest.path, file.name, file.data) as { resourceType?: unknown };
    if (!json || typeof json !== 'object' || Array.isArray(json) || typeof json.resourceType !== 'string') {
      throw new PackageError(`${manifest.path}: ${file.name} is not a FHIR resource (no resourceType)`);
    }
    if (!PACKAGE_RESOURCE_TYPES.includes(json.resourceType)) {
      passed.resources++;
      continue;
    }
    yield { resource: json as Resource, file: file.name };
  }
}

function parseJson(path: string, name: string, data: Buffer): unknown {
  try {
    return JSON.parse(data.toString('utf8').replace(/^\uFEFF/, ''));
  } catch (err) {
    throw new PackageError(`${path}: ${name} is not JSON (${(err as Error).message})`);
  }
}
