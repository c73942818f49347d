import { createReadStream, readFileSync, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { CodeSystemConcept, Resource } from '@medplum/fhirtypes';
import type { TerminologyEnv } from './types.js';
import { indexCodeSystem } from './code-system-store.js';

/**
 * `lattice import <file>` (docs/terminology.md#cli-import): loads terminology resources from a CodeSystem or
 * ValueSet JSON file, a Bundle, or NDJSON (one resource per line), as shared content (or into
 * `projectId`), with progress on stderr.
 *
 * Memory: NDJSON is streamed line by line (memory bounded by the largest line); a JSON file is
 * parsed whole. A CodeSystem with more than LARGE_CODE_SYSTEM concepts is stored as a
 * `content: not-present` resource and its concepts go straight into the terminology index in
 * bulk (with progress), instead of into the resource, its history and the search index — the
 * layout used for SNOMED-size systems. Re-importing a file updates the same resources (matched
 * by id, else by url|version).
 */

export interface ImportOptions {
  /** Project that owns the imported resources; shared content (every project reads it) when absent. */
  projectId?: string;
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
}

/** Resource types the terminology import accepts (others in a Bundle/NDJSON are skipped). */
const TYPES = new Set(['CodeSystem', 'ValueSet', 'ConceptMap', 'NamingSystem']);
/** Above this many concepts a CodeSystem is indexed directly (see the module comment). */
export const LARGE_CODE_SYSTEM = 20_000;

/** Imports `path`; returns what was written. */
export async function importFile(path: string, services: TerminologyEnv, options: ImportOptions = {}): Promise<ImportSummary> {
  const started = Date.now();
  const size = statSync(path).size;
  const summary: ImportSummary = { resources: 0, codeSystems: 0, valueSets: 0, concepts: 0, skipped: 0, ms: 0 };
  const bar = progressBar(options.out ?? process.stderr);
  const write = async (resource: Resource) => {
    if (!resource || typeof resource !== 'object' || !TYPES.has(resource.resourceType)) {
      summary.skipped++;
      return;
    }
    summary.concepts += await writeResource(services, resource, options, bar);
    summary.resources++;
    if (resource.resourceType === 'CodeSystem') summary.codeSystems++;
    if (resource.resourceType === 'ValueSet') summary.valueSets++;
  };

  if (await isNdjson(path)) {
    let bytes = 0;
    const lines = createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity });
    let lineNo = 0;
    for await (const line of lines) {
      lineNo++;
      bytes += Buffer.byteLength(line) + 1;
      if (!line.trim()) continue;
      let resource: Resource;
      try {
        resource = JSON.parse(line) as Resource;
      } catch {
        throw new Error(`${path}:${lineNo}: not valid JSON`);
      }
      await write(resource);
      bar(`${path}`, bytes, size, `${summary.resources} resources`);
    }
  } else {
    const parsed = JSON.parse(readFileSync(path, 'utf8').replace(/^\uFEFF/, '')) as Resource;
    const resources = parsed.resourceType === 'Bundle' ? ((parsed).entry ?? []).map((e) => e.resource as Resource) : [parsed];
    for (const [i, r] of resources.entries()) {
      await write(r);
      bar(path, i + 1, resources.length, 'resources');
    }
  }
  bar.done();
  summary.ms = Date.now() - started;
  return summary;
}

/** NDJSON by extension, or when the first line alone is a complete resource. */
async function isNdjson(path: string): Promise<boolean> {
  if (/\.(ndjson|jsonl)$/i.test(path)) return true;
  const lines = createInterface({ input: createReadStream(path, { encoding: 'utf8', end: 1 << 20 }), crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.trim()) continue;
    lines.close();
    try {
      const first = JSON.parse(line) as Resource;
      return typeof first?.resourceType === 'string' && first.resourceType !== 'Bundle';
    } catch {
      return false;
    }
  }
  return false;
}

/** Writes one resource; returns the number of concepts it indexed. */
async function writeResource(services: TerminologyEnv, input: Resource, options: ImportOptions, bar: ProgressBar): Promise<number> {
  const repo = services.system;
  const resource = { ...input, meta: { ...(input.meta ?? {}), project: options.projectId } } as Resource;
  if (!options.projectId) delete (resource.meta as { project?: string }).project;
  resource.id ??= await existingId(services, resource, options.projectId);
  const cs = resource.resourceType === 'CodeSystem' ? (resource) : undefined;
  const concepts = cs ? countConcepts(cs.concept) : 0;
  if (!cs || concepts <= LARGE_CODE_SYSTEM) {
    if (resource.id) await repo.update(resource);
    else await repo.create(resource);
    return concepts;
  }
  // Large: the resource without its concepts, then the concepts straight into the index.
  const stored = resource.id
    ? (await repo.update({ ...cs, concept: undefined, content: 'not-present' })).resource
    : await repo.create({ ...cs, concept: undefined, content: 'not-present' });
  const label = `${cs.url ?? cs.id} (${concepts.toLocaleString('en')} concepts)`;
  await services.db.transaction((tx) =>
    indexCodeSystem(
      tx,
      { ...cs, content: cs.content === 'not-present' ? 'complete' : cs.content },
      { resourceId: stored.id as string, projectId: options.projectId, lastUpdated: stored.meta?.lastUpdated ?? new Date().toISOString() },
      (done, total) => bar(label, done, total, 'index rows'),
    ),
  );
  return concepts;
}

/** The id of a stored resource with the same url|version in the same project (or shared), so a re-import updates it. */
async function existingId(services: TerminologyEnv, r: Resource, projectId: string | undefined): Promise<string | undefined> {
  const { url, version } = r as { url?: string; version?: string };
  if (!url || (r.resourceType !== 'CodeSystem' && r.resourceType !== 'ValueSet')) return undefined;
  const table = r.resourceType === 'CodeSystem' ? 'tx_code_system' : 'tx_value_set';
  const scope = r.resourceType === 'CodeSystem' ? ' AND scope IS NULL' : '';
  const res = await services.db.query<{ resource_id: string }>(
    `SELECT resource_id FROM ${table} WHERE url = $1 AND version IS NOT DISTINCT FROM $2${scope} AND project_id IS NOT DISTINCT FROM $3 LIMIT 1`,
    [url, version ?? null, projectId ?? null],
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

type ProgressBar = ((label: string, done: number, total: number, unit: string) => void) & { done(): void };

/** A one-line progress bar on a terminal; a line per 10% otherwise (logs stay readable). */
function progressBar(out: NodeJS.WritableStream & { isTTY?: boolean }): ProgressBar {
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
