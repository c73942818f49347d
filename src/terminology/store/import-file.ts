import { createReadStream, statSync } from 'node:fs';
import type { CodeSystem, CodeSystemConcept, Resource } from '@medplum/fhirtypes';
import type { Queryable } from '../../core/database.js';
import { PUBLIC_TYPES, ownedBy as ownedByProject } from '../../storage/scope.js';
import type { TerminologyEnv } from '../types.js';
import { jsonStream, type JsonStreamEvent } from './json-stream.js';
import { StagedCodeSystem } from './staged-import.js';
import { persistIndexes } from './index-persist.js';

/**
 * `lattice import <file>` (docs/terminology.md#cli-import): loads terminology resources from a CodeSystem or
 * ValueSet JSON file, a Bundle, or NDJSON (one resource per line), as shared content (or into
 * `projectId`), with progress on stderr.
 *
 * Memory: the input is read as a stream (json-stream.ts) — a resource at a time, and a
 * CodeSystem's `concept` array (or a Bundle's `entry` array) a batch of elements at a time, so
 * memory is bounded by a batch, not by the file. A CodeSystem with more than LARGE_CODE_SYSTEM
 * concepts is indexed into a staged index while it is read and switched in atomically with the
 * write of the resource, stored as `content: not-present` (staged-import.ts) — the layout for
 * SNOMED-size systems; smaller ones are written through the repository like any resource.
 * Re-importing a file updates the same resources (matched by id, else by url|version).
 */

export interface ImportOptions {
  /** Project that owns the imported resources; shared content (every project reads it) when absent. */
  projectId?: string;
  /**
   * Without a project, clinical resources (any type but terminology and definitions) are refused
   * unless this is true (`lattice import --shared`): shared content is read by every project, so
   * storing patient data there must be asked for (docs/rest.md#bulk-load).
   */
  shared?: boolean;
  /**
   * Checked before each resource is written (with its id, when it has one); throws to refuse
   * it. The server's import route validates and checks ownership here; the CLI trusts its file.
   */
  check?: (resource: Resource) => Promise<void>;
  /**
   * Takes every resource that is not terminology (instead of skipping it): the command line
   * hands them to the clinical bulk load (storage/bulk-load.ts, docs/rest.md#bulk-load), with
   * where each came from (`line 3`, `entry 7`) and its Bundle entry's full URL.
   */
  other?: (resource: unknown, where: string, fullUrl?: string) => Promise<void>;
  /** Called when a Bundle's entries have all been handed over. */
  bundleEnd?: () => Promise<void>;
  /** Where progress goes (default stderr). */
  out?: NodeJS.WritableStream & { isTTY?: boolean };
}

export interface ImportSummary {
  resources: number;
  codeSystems: number;
  valueSets: number;
  concepts: number;
  skipped: number;
  ms: number;
  /** Clinical resources stored by the bulk load beside it (the server's import answers it). */
  others?: number;
}

/** Resource types the terminology import accepts (others in a Bundle/NDJSON are skipped). */
const TYPES = new Set(['CodeSystem', 'ValueSet', 'ConceptMap', 'NamingSystem']);
/**
 * Above this many concepts a CodeSystem is indexed directly (see the module comment); the
 * default of `LATTICE_TX_STAGED_IMPORT_ABOVE`.
 */
export const LARGE_CODE_SYSTEM = 20_000;

/** Thrown when clinical data would become shared content without `--shared`. */
export class SharedClinicalImport extends Error {}

/** The refusal of a clinical resource that would be stored as shared content (names both ways out). */
function refuseSharedClinical(resource: unknown, where: string, options: ImportOptions): void {
  if (options.projectId !== undefined || options.shared === true) return;
  const type = (resource as { resourceType?: unknown }).resourceType;
  if (typeof type === 'string' && PUBLIC_TYPES.includes(type)) return;
  throw new SharedClinicalImport(
    `${where}: ${typeof type === 'string' ? type : 'this resource'} is clinical data and would be shared with every project: ` +
      'name its project with --project <id>, or pass --shared to store it as shared content',
  );
}

/** Imports `path`; returns what was written. */
export async function importFile(path: string, services: TerminologyEnv, options: ImportOptions = {}): Promise<ImportSummary> {
  return importStream(createReadStream(path), services, { ...options, label: path, size: statSync(path).size });
}

/**
 * Imports a stream of JSON (a resource, a Bundle, or NDJSON): the same for a file and for a
 * request body (`lattice import --url`, docs/terminology.md#import-into-a-running-server).
 */
export function importStream(
  source: AsyncIterable<Buffer | string>,
  services: TerminologyEnv,
  options: ImportOptions & { label?: string; size?: number } = {},
): Promise<ImportSummary> {
  return importEvents(jsonStream(source), services, options);
}

/**
 * Imports the resources of a stream of parsed JSON (json-stream.ts events): what importStream
 * parses, or what a loader produces already parsed (a LOINC release, docs/terminology.md#loinc).
 */
export async function importEvents(
  events: AsyncIterable<JsonStreamEvent>,
  services: TerminologyEnv,
  options: ImportOptions & { label?: string; size?: number } = {},
): Promise<ImportSummary> {
  const started = Date.now();
  const large = services.config?.txStagedImportAbove ?? LARGE_CODE_SYSTEM;
  const summary: ImportSummary = { resources: 0, codeSystems: 0, valueSets: 0, concepts: 0, skipped: 0, ms: 0 };
  const bar = progressBar(options.out ?? process.stderr);
  const label = options.label ?? 'import';
  const counted = (resource: Resource, concepts: number) => {
    summary.concepts += concepts;
    summary.resources++;
    if (resource.resourceType === 'CodeSystem') summary.codeSystems++;
    if (resource.resourceType === 'ValueSet') summary.valueSets++;
  };
  const write = async (resource: Resource, where: string, fullUrl?: string) => {
    if (!resource || typeof resource !== 'object' || !TYPES.has(resource.resourceType)) {
      if (options.other && resource !== undefined) {
        refuseSharedClinical(resource, where, options);
        await options.other(resource, where, fullUrl);
      }
      else summary.skipped++;
      return;
    }
    const cs = resource.resourceType === 'CodeSystem' ? resource : undefined;
    const concepts = cs ? countConcepts(cs.concept) : 0;
    if (cs && concepts > large) {
      // Parsed whole (e.g. `concept` not at the top level of its line): still indexed staged.
      const staged = await StagedCodeSystem.begin(services.db, cs, options.projectId);
      await finishLarge(services, { ...cs, concept: undefined }, staged, options, bar, () => staged.add(cs.concept ?? []));
    } else {
      await writeResource(services, resource, options);
    }
    counted(resource, concepts);
  };

  // A top-level object whose `concept` (or Bundle `entry`) array is streamed.
  let open: { key: string; header: Record<string, unknown>; buffered: unknown[]; bufferedConcepts: number; entries: number; staged?: StagedCodeSystem } | undefined;
  try {
    for await (const event of events) {
      const size = options.size ?? 0;
      switch (event.kind) {
        case 'value':
          await write(event.value as Resource, event.where ?? `line ${event.line}`);
          break;
        case 'header':
          open = { key: event.key, header: event.header, buffered: [], bufferedConcepts: 0, entries: 0 };
          break;
        case 'items': {
          const o = open as NonNullable<typeof open>;
          if (o.key === 'entry' && o.header.resourceType === 'Bundle') {
            for (const entry of event.items as Array<{ resource?: Resource; fullUrl?: string } | null>) {
              await write(entry?.resource as Resource, `entry ${++o.entries}`, entry?.fullUrl);
            }
          } else if (o.staged) {
            await o.staged.add(event.items as CodeSystemConcept[]);
          } else {
            o.buffered.push(...event.items);
            o.bufferedConcepts += countConcepts(event.items as CodeSystemConcept[]);
            if (o.header.resourceType === 'CodeSystem' && o.bufferedConcepts > large) {
              // Large: index straight into a staged index from here on (bounded memory).
              o.staged = await StagedCodeSystem.begin(services.db, o.header as unknown as CodeSystem, options.projectId);
              await o.staged.add(o.buffered as CodeSystemConcept[]);
              o.buffered = [];
            }
          }
          break;
        }
        case 'end': {
          const o = open as NonNullable<typeof open>;
          open = undefined;
          const resource = { ...o.header, ...event.tail } as unknown as Resource;
          if (o.key === 'entry' && o.header.resourceType === 'Bundle') {
            await options.bundleEnd?.();
            break;
          }
          if (o.staged) {
            const staged = o.staged;
            await finishLarge(services, resource as CodeSystem, staged, options, bar);
            counted(resource, staged.size);
          } else {
            await write({ ...resource, [o.key]: o.buffered }, 'line 1');
          }
          break;
        }
      }
      if (size > 0) bar(label, event.bytes, size, `bytes, ${summary.resources} resources`);
    }
  } catch (err) {
    await open?.staged?.abandon().catch(() => undefined);
    throw err;
  }
  bar.done();
  summary.ms = Date.now() - started;
  return summary;
}

/** Writes one resource through the repository (and so through the index hooks). */
async function writeResource(services: TerminologyEnv, input: Resource, options: ImportOptions): Promise<void> {
  const repo = services.system;
  const resource = ownedBy(input, options.projectId);
  resource.id ??= await existingId(services.db, resource, options.projectId);
  await options.check?.(resource);
  if (resource.id) await repo.update(resource);
  else await repo.create(resource);
}

/**
 * A large CodeSystem: completes its staged index, then stores the resource without its
 * concepts (`content: not-present`) and switches the index in, in one transaction.
 */
export async function finishLarge(
  services: TerminologyEnv,
  cs: CodeSystem,
  staged: StagedCodeSystem,
  options: ImportOptions,
  bar: ProgressBar,
  fill?: () => Promise<void>,
  /** Completes the staged index (default: its concepts' hierarchy); a release format's loader brings its own (rf2-import.ts). */
  complete?: () => Promise<void>,
): Promise<void> {
  try {
    await fill?.();
    const label = `${cs.url ?? cs.id} (${staged.size.toLocaleString('en')} concepts)`;
    await (complete ? complete() : staged.complete((done, total) => bar(`${label} hierarchy`, done, total, 'concepts')));
    const resource = ownedBy({ ...cs, content: 'not-present' }, options.projectId);
    delete resource.concept;
    resource.id ??= await existingId(services.db, resource, options.projectId);
    // Before the switch transaction: a check that reads the database must not wait for it.
    await options.check?.(resource);
    await staged.publish(async (tx) => {
      const repo = services.system.inTransaction(tx);
      return resource.id ? (await repo.update(resource)).resource : await repo.create(resource);
    });
  } catch (err) {
    await staged.abandon().catch(() => undefined);
    throw err;
  }
  // The import is done; what follows only spares the servers the first build of its index.
  const started = Date.now();
  await persistIndexes(services.db, staged.key).then(
    (bytes) => services.log.info({ url: cs.url, version: cs.version, mb: Math.round(bytes / 1e6), ms: Date.now() - started }, 'terminology index persisted'),
    (err: unknown) => services.log.warn({ url: cs.url, version: cs.version, err }, 'terminology index not persisted: servers build it on first use'),
  );
}

/** The resource as stored by the import: in `projectId`, or shared (no `meta.project`, no empty `meta`). */
function ownedBy<T extends Resource>(input: T, projectId: string | undefined): T {
  const meta = { ...(input.meta ?? {}), project: projectId };
  if (!projectId) delete meta.project;
  const resource: T = { ...input, meta };
  if (Object.keys(meta).length === 0) delete (resource as { meta?: unknown }).meta;
  return resource;
}

/** The id of a stored resource with the same url|version in the same project (or shared), so a re-import updates it. */
async function existingId(db: Queryable, r: Resource, projectId: string | undefined): Promise<string | undefined> {
  const { url, version } = r as { url?: string; version?: string };
  if (!url || (r.resourceType !== 'CodeSystem' && r.resourceType !== 'ValueSet')) return undefined;
  const table = r.resourceType === 'CodeSystem' ? 'tx_code_system' : 'tx_value_set';
  const scope = r.resourceType === 'CodeSystem' ? ' AND t.scope IS NULL' : '';
  const owner = ownedByProject({ alias: 't', project: 'project_id' }, projectId, 3);
  const res = await db.query<{ resource_id: string }>(
    `SELECT t.resource_id FROM ${table} t WHERE t.url = $1 AND t.version IS NOT DISTINCT FROM $2${scope} AND ${owner.sql} LIMIT 1`,
    [url, version ?? null, ...owner.params],
  );
  return res.rows[0]?.resource_id;
}

function countConcepts(list: CodeSystemConcept[] | undefined): number {
  let n = 0;
  const stack = [...(list ?? [])];
  while (stack.length > 0) {
    const c = stack.pop() as CodeSystemConcept;
    n++;
    if (c.concept) stack.push(...c.concept);
  }
  return n;
}

export type ProgressBar = ((label: string, done: number, total: number, unit: string) => void) & { done(): void };

/** A one-line progress bar on a terminal; a line per 10% otherwise (logs stay readable). */
export function progressBar(out: NodeJS.WritableStream & { isTTY?: boolean }): ProgressBar {
  let lastTenth = -1;
  let lastLabel = '';
  let drawn = false;
  const bar = ((label: string, done: number, total: number, unit: string) => {
    const ratio = total > 0 ? Math.min(1, done / total) : 1;
    if (label !== lastLabel) {
      lastTenth = -1;
      lastLabel = label;
    }
    const text = `${label} [${'#'.repeat(Math.round(ratio * 30)).padEnd(30, '.')}] ${(ratio * 100).toFixed(0)}% ${done.toLocaleString('en')}/${total.toLocaleString('en')} ${unit}`;
    if (out.isTTY) {
      out.write(`\r${text}`);
      drawn = true;
    } else if (Math.floor(ratio * 10) > lastTenth) {
      lastTenth = Math.floor(ratio * 10);
      out.write(`${text}\n`);
    }
  }) as ProgressBar;
  bar.done = () => {
    if (drawn) out.write('\n');
  };
  return bar;
}
