import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { CodeSystem, Resource } from '@medplum/fhirtypes';
import { FhirError } from '../../fhir/outcome.js';
import { definitionsDir, readDefinitionBundle } from '../../fhir/definitions.js';
import { ownedBy } from '../../storage/scope.js';
import type { TermContext, TerminologyEnv } from '../types.js';

/**
 * The base R4 terminologies (~1060 CodeSystems, ~1320 ValueSets from the definitions package)
 * as shared content (project NULL), written through the normal repository path so they are
 * readable, searchable and indexed like any other resource.
 *
 * Start-up never waits for them. A canonical that resolves to nothing in the database but is a
 * base canonical is written on the spot (one resource, a few ms), so `$lookup` on
 * `administrative-gender` works on a brand-new server; and a background job writes the rest
 * once per database (recorded in `tx_base_load`), so restarts skip it.
 */

const FILES = ['valuesets.json', 'v3-codesystems.json', 'v2-tables.json'];
const TYPES = new Set(['CodeSystem', 'ValueSet']);

let catalog: Map<string, Resource[]> | undefined;

/** Base CodeSystems/ValueSets by `Type url`, every version (parsed once per process). */
function baseCatalog(): Map<string, Resource[]> {
  if (!catalog) {
    catalog = new Map();
    for (const file of FILES) {
      for (const r of readDefinitionBundle(file)) {
        const url = (r as { url?: string }).url;
        if (!TYPES.has(r.resourceType) || !url || !r.id) continue;
        const key = `${r.resourceType} ${url}`;
        catalog.set(key, [...(catalog.get(key) ?? []), r]);
      }
    }
  }
  return catalog;
}

/** The base CodeSystems (url, version, content), whether or not they are stored yet. */
export function baseCodeSystems(): Array<{ url: string; version: string | undefined; content: string | undefined }> {
  return [...baseCatalog().values()]
    .flat()
    .filter((r): r is CodeSystem => r.resourceType === 'CodeSystem')
    .map((cs) => ({ url: cs.url as string, version: cs.version, content: cs.content }));
}

/**
 * A fingerprint of the base content (sizes of the package files), so a new definitions package
 * is loaded again — cheap enough to check on every start without parsing 22 MB of JSON.
 */
export function baseFingerprint(): string {
  const dir = definitionsDir;
  const hash = createHash('sha256');
  for (const file of FILES) hash.update(`${file}:${statSync(join(dir, file)).size}\n`);
  return `r4-${hash.digest('hex').slice(0, 16)}`;
}

/** Writes in progress per application (several apps share a process in tests). */
const inFlightByApp = new WeakMap<TerminologyEnv, Map<string, Promise<boolean>>>();

/**
 * Writes the base resources with this canonical (every version) into the shared content.
 * Returns true when the canonical is a base canonical (written now or already present).
 */
export async function materializeBase(tc: TermContext, type: 'CodeSystem' | 'ValueSet', url: string): Promise<boolean> {
  const resources = baseCatalog().get(`${type} ${url}`);
  if (!resources) return false;
  const pending = inFlightByApp.get(tc.env) ?? new Map<string, Promise<boolean>>();
  inFlightByApp.set(tc.env, pending);
  // Every version of the canonical (the v2 tables publish several), one write per resource id.
  await Promise.all(
    resources.map((resource) => {
      const key = `${type}/${resource.id}`;
      let p = pending.get(key);
      if (!p) {
        p = writeBase(tc.env, resource).finally(() => pending.delete(key));
        pending.set(key, p);
      }
      return p;
    }),
  );
  return true;
}

/**
 * Writes one base resource unless its id is taken: an identical shared copy is left alone (the
 * repository makes identical updates no-ops), a deleted one stays deleted (a super admin removed
 * it), and an id held by a project is never overwritten.
 */
async function writeBase(services: TerminologyEnv, resource: Resource): Promise<boolean> {
  const repo = services.system;
  try {
    const existing = await repo.read(resource.resourceType, resource.id as string);
    if (existing.meta?.project) return false;
  } catch (err) {
    if (!(err instanceof FhirError) || err.status !== 404) return false;
  }
  const { meta: _meta, ...content } = resource;
  await repo.update(content);
  return true;
}

/** Rows of the shared content (no project), as the tenancy rule words it. */
const SHARED = ownedBy({ alias: 't', project: 'project_id' }, undefined, 1);

/**
 * Background job: writes every base resource not yet in the shared content, a batch at a time,
 * then records the package fingerprint. `stopped()` is polled between resources so shutdown is
 * prompt; an interrupted load resumes on the next start.
 */
export async function preloadBaseTerminology(services: TerminologyEnv, stopped: () => boolean): Promise<void> {
  const fingerprint = baseFingerprint();
  const done = await services.db.query('SELECT 1 FROM tx_base_load WHERE package_version = $1', [fingerprint]);
  if (done.rows.length > 0) return;
  const started = Date.now();
  const present = new Set(
    (
      await services.db.query<{ k: string }>(
        `SELECT 'CodeSystem/' || t.resource_id AS k FROM tx_code_system t WHERE ${SHARED.sql} AND t.scope IS NULL
         UNION ALL SELECT 'ValueSet/' || t.resource_id FROM tx_value_set t WHERE ${SHARED.sql}`,
      )
    ).rows.map((r) => r.k),
  );
  let written = 0;
  for (const resource of [...baseCatalog().values()].flat()) {
    if (stopped()) return;
    if (present.has(`${resource.resourceType}/${resource.id}`)) continue;
    if (await writeBase(services, resource)) written++;
    // Let requests interleave with the load (PGlite runs one statement at a time).
    if (written % 20 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  await services.db.query('INSERT INTO tx_base_load (package_version, completed_at) VALUES ($1, now()) ON CONFLICT DO NOTHING', [
    fingerprint,
  ]);
  services.log.info({ written, ms: Date.now() - started, fingerprint }, 'base terminologies loaded');
}
