import type { CodeSystemProperty, ValueSet } from '@medplum/fhirtypes';
import type { ScopedTable } from '../core/scope.js';
import { materializeBase } from './base-terminology.js';
import type { CodeSystemInfo, TermContext } from './types.js';
import { newestFirst, splitCanonical, versionMatches } from './versions.js';

/**
 * Canonical resolution (docs/terminology.md#canonicals-and-versions): `url|version`, or a separate version, else the newest
 * version; among equals the caller's project wins over shared content. Only what the caller's
 * repository can see is a candidate (its scope's predicate is applied to the index), then the
 * resources supplied with the request, and last the base R4 terminologies, which are loaded into
 * the shared content on first use.
 */

/** The index tables as tenancy sees them (storage/scope.ts): a project column, no account rows. */
const CODE_SYSTEM_TABLE: ScopedTable = { alias: 'r', project: 'project_id' };
const VALUE_SET_TABLE: ScopedTable = { alias: 'r', project: 'project_id' };

interface CodeSystemRow {
  cs_key: number;
  resource_id: string;
  project_id: string | null;
  url: string;
  version: string | null;
  last_updated: string | Date;
  content: string;
  case_sensitive: boolean;
  hierarchy_meaning: string | null;
  supplements: string | null;
  language: string | null;
  name: string | null;
  title: string | null;
  property_defs: string;
  concept_count: number;
}

/** Resolves a code system canonical for the caller; undefined when none is visible. */
export function resolveCodeSystem(tc: TermContext, canonical: string, version?: string): Promise<CodeSystemInfo | undefined> {
  const split = splitCanonical(canonical);
  const wanted = version ?? split.version;
  return memo(tc, `cs ${split.url} ${wanted ?? ''}`, async () => {
    const candidates = await codeSystemCandidates(tc, split.url);
    return pick(tc, candidates, wanted);
  });
}

/** Every visible version of a code system (newest first), e.g. for "valid versions" messages. */
export async function codeSystemVersions(tc: TermContext, url: string): Promise<string[]> {
  const all = newestFirst(await codeSystemCandidates(tc, url));
  return [...new Set(all.map((c) => c.version).filter((v): v is string => v !== undefined))];
}

function codeSystemCandidates(tc: TermContext, url: string): Promise<CodeSystemInfo[]> {
  return memo(tc, `cs-all ${url}`, async () => {
    const inline = tc.inlineCodeSystems.filter((c) => c.url === url);
    let stored = await storedCodeSystems(tc, url);
    if (stored.length === 0 && inline.length === 0 && (await materializeBase(tc, 'CodeSystem', url))) {
      stored = await storedCodeSystems(tc, url);
    }
    return [...inline, ...stored];
  });
}

async function storedCodeSystems(tc: TermContext, url: string): Promise<CodeSystemInfo[]> {
  const vis = tc.repo.scope.predicate(CODE_SYSTEM_TABLE, 2);
  const res = await tc.db.query<CodeSystemRow>(
    `SELECT * FROM tx_code_system r WHERE r.url = $1 AND r.scope IS NULL AND ${vis.sql}`,
    [url, ...vis.params],
  );
  return res.rows.map(toInfo);
}

/**
 * Every stored code system the caller sees (url, version, content), request-scoped ones left
 * out — for the TerminologyCapabilities statement (docs/terminology.md#terminologycapabilities).
 */
export async function visibleCodeSystems(tc: TermContext): Promise<Array<{ url: string; version: string | undefined; content: string }>> {
  const vis = tc.repo.scope.predicate(CODE_SYSTEM_TABLE, 1);
  const res = await tc.db.query<{ url: string; version: string | null; content: string }>(
    `SELECT DISTINCT r.url, r.version, r.content FROM tx_code_system r WHERE r.scope IS NULL AND ${vis.sql}`,
    vis.params,
  );
  return res.rows.map((r) => ({ url: r.url, version: r.version ?? undefined, content: r.content }));
}

/** The code system with this index key (used for request-scoped ones). */
export async function codeSystemByKey(tc: TermContext, key: number): Promise<CodeSystemInfo | undefined> {
  const res = await tc.db.query<CodeSystemRow>('SELECT * FROM tx_code_system r WHERE r.cs_key = $1', [key]);
  return res.rows[0] ? toInfo(res.rows[0]) : undefined;
}

/** The indexed code system of a stored CodeSystem resource visible to the caller (instance-level calls). */
export async function codeSystemByResourceId(tc: TermContext, id: string): Promise<CodeSystemInfo | undefined> {
  const vis = tc.repo.scope.predicate(CODE_SYSTEM_TABLE, 2);
  const res = await tc.db.query<CodeSystemRow>(
    `SELECT * FROM tx_code_system r WHERE r.resource_id = $1 AND r.scope IS NULL AND ${vis.sql}`,
    [id, ...vis.params],
  );
  return res.rows[0] ? toInfo(res.rows[0]) : undefined;
}

/** Resolves a value set canonical for the caller; undefined when none is visible. */
export function resolveValueSet(tc: TermContext, canonical: string, version?: string): Promise<ValueSet | undefined> {
  const split = splitCanonical(canonical);
  const wanted = version ?? split.version;
  return memo(tc, `vs ${split.url} ${wanted ?? ''}`, async () => {
    const inline = tc.inlineValueSets
      .filter((v) => v.url === split.url)
      .map((vs) => ({ vs, version: vs.version, lastUpdated: vs.meta?.lastUpdated ?? '', projectId: tc.repo.auth.projectId, inline: true }));
    let stored = await storedValueSets(tc, split.url);
    if (stored.length === 0 && inline.length === 0 && (await materializeBase(tc, 'ValueSet', split.url))) {
      stored = await storedValueSets(tc, split.url);
    }
    const chosen = pick(tc, [...inline, ...stored], wanted);
    if (!chosen) return undefined;
    if ('vs' in chosen) return chosen.vs;
    return tc.repo.tryRead<ValueSet>('ValueSet', chosen.resourceId);
  });
}

async function storedValueSets(
  tc: TermContext,
  url: string,
): Promise<Array<{ resourceId: string; projectId: string | undefined; version: string | undefined; lastUpdated: string }>> {
  const vis = tc.repo.scope.predicate(VALUE_SET_TABLE, 2);
  const res = await tc.db.query<{ resource_id: string; project_id: string | null; version: string | null; last_updated: string | Date }>(
    `SELECT r.resource_id, r.project_id, r.version, r.last_updated FROM tx_value_set r WHERE r.url = $1 AND ${vis.sql}`,
    [url, ...vis.params],
  );
  return res.rows.map((r) => ({
    resourceId: r.resource_id,
    projectId: r.project_id ?? undefined,
    version: r.version ?? undefined,
    lastUpdated: iso(r.last_updated),
  }));
}

/**
 * Chooses among candidates: those matching the requested version, then request-supplied before
 * the caller's project before shared content before other projects (super admins), then newest.
 */
function pick<T extends { version: string | undefined; lastUpdated: string; projectId: string | undefined; inline?: boolean }>(
  tc: TermContext,
  candidates: T[],
  version: string | undefined,
): T | undefined {
  const matching = version === undefined ? candidates : candidates.filter((c) => versionMatches(c.version, version));
  if (matching.length === 0) return undefined;
  const project = tc.repo.auth.projectId;
  const tier = (c: T) => (c.inline ? 0 : c.projectId !== undefined && c.projectId === project ? 1 : c.projectId === undefined ? 2 : 3);
  const best = Math.min(...matching.map(tier));
  return newestFirst(matching.filter((c) => tier(c) === best))[0];
}

function toInfo(r: CodeSystemRow): CodeSystemInfo & { inline?: boolean } {
  return {
    key: r.cs_key,
    resourceId: r.resource_id,
    projectId: r.project_id ?? undefined,
    url: r.url,
    version: r.version ?? undefined,
    lastUpdated: iso(r.last_updated),
    content: r.content,
    caseSensitive: r.case_sensitive,
    hierarchyMeaning: r.hierarchy_meaning ?? undefined,
    supplements: r.supplements ?? undefined,
    language: r.language ?? undefined,
    name: r.name ?? undefined,
    title: r.title ?? undefined,
    propertyDefs: JSON.parse(r.property_defs) as CodeSystemProperty[],
    conceptCount: r.concept_count,
  };
}

/** Converts a row of `tx_code_system` (for modules that query it directly). */
export const codeSystemInfoOf = toInfo;

function iso(v: string | Date): string {
  return (v instanceof Date ? v : new Date(v)).toISOString();
}

/** Runs `fn` once per request for a key. */
export function memo<T>(tc: TermContext, key: string, fn: () => Promise<T>): Promise<T> {
  let p = tc.memo.get(key) as Promise<T> | undefined;
  if (!p) {
    p = fn();
    tc.memo.set(key, p);
  }
  return p;
}
