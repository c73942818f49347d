import type { CodeSystemProperty, ValueSet } from '@medplum/fhirtypes';
import { materializeBase } from '../store/base-terminology.js';
import { terminologyCache } from '../providers/fhir/index-cache.js';
import { INDEX_SECTION } from '../providers/fhir/index-snapshot.js';
import { builtinCodeSystem } from '../providers/builtin.js';
import { implicitValueSet as snomedImplicitValueSet, isImplicitValueSet } from '../providers/implicit-value-sets.js';
import { LOINC_URL, loincImplicitCode, loincImplicitValueSet, providerFor } from '../providers/select.js';
import type { CodeSystemInfo, TermContext } from '../types.js';
import { newestFirst, splitCanonical, versionMatches } from '../versions.js';

/**
 * Canonical resolution (docs/terminology.md#canonicals-and-versions): `url|version`, or a separate version, else the newest
 * version; among equals the caller's project wins over shared content. Only what the caller's
 * repository can see is a candidate (its scope's rule is applied to the index rows), then the
 * resources supplied with the request, and last the base R4 terminologies, which are loaded into
 * the shared content on first use. A code system built in (providers/builtin.ts) is a candidate
 * like shared content when neither the request, the caller's project nor shared content has one
 * of its URL.
 *
 * The rows of every project for a canonical are cached in memory until the next terminology
 * change on any node (index-cache.ts, docs/terminology.md#in-memory-index); the caller's
 * visibility is applied to them per request with the tenancy rule's row check (`scope.canSee`,
 * the same rule as its SQL predicate).
 */

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
  publication?: string | null;
}

/**
 * Resolves a code system canonical for the caller; undefined when none is visible. A supplement
 * is not a code system (docs/terminology.md#supplements-are-not-code-systems): see resolveSupplement.
 */
export function resolveCodeSystem(tc: TermContext, canonical: string, version?: string): Promise<CodeSystemInfo | undefined> {
  const split = splitCanonical(canonical);
  const wanted = version ?? split.version;
  return memo(tc, `cs ${split.url} ${wanted ?? ''}`, async () => {
    const candidates = (await codeSystemCandidates(tc, split.url)).filter((c) => c.content !== 'supplement');
    return pick(tc, candidates, wanted);
  });
}

/** Resolves a supplement (a CodeSystem with `content = supplement`) for the caller. */
export function resolveSupplement(tc: TermContext, canonical: string, version?: string): Promise<CodeSystemInfo | undefined> {
  const split = splitCanonical(canonical);
  const wanted = version ?? split.version;
  return memo(tc, `supplement ${split.url} ${wanted ?? ''}`, async () => {
    const candidates = (await codeSystemCandidates(tc, split.url)).filter((c) => c.content === 'supplement');
    return pick(tc, candidates, wanted);
  });
}

/**
 * The stored code systems (every project's) whose index has a persisted snapshot
 * (docs/terminology.md#persisted-indexes), largest first: those opened at start by default.
 */
export async function persistedCodeSystems(tc: TermContext): Promise<CodeSystemInfo[]> {
  const res = await tc.db.query<CodeSystemRow>(
    `SELECT r.* FROM tx_code_system r WHERE r.scope IS NULL AND r.resource_id IS NOT NULL
       AND EXISTS (SELECT 1 FROM tx_index_snapshot s WHERE s.cs_key = r.cs_key AND s.section = $1)
     ORDER BY r.concept_count DESC, r.cs_key`,
    [INDEX_SECTION],
  );
  return res.rows.map(toInfo);
}

/** Every visible version of a code system (newest first), e.g. for "valid versions" messages. */
export async function codeSystemVersions(tc: TermContext, url: string): Promise<string[]> {
  const all = newestFirst((await codeSystemCandidates(tc, url)).filter((c) => c.content !== 'supplement'));
  return [...new Set(all.map((c) => c.version).filter((v): v is string => v !== undefined))];
}

function codeSystemCandidates(tc: TermContext, url: string): Promise<CodeSystemInfo[]> {
  return memo(tc, `cs-all ${url}`, async () => {
    const inline = tc.inlineCodeSystems.filter((c) => c.url === url);
    let stored = await storedCodeSystems(tc, url);
    if (stored.length === 0 && inline.length === 0 && (await materializeBase(tc, 'CodeSystem', url))) {
      stored = await storedCodeSystems(tc, url);
    }
    // A code system built in counts as shared content, unless the request, the caller's
    // project or shared content has one of the URL (docs/terminology.md#code-systems-built-in).
    const builtin = builtinCodeSystem(url);
    const own = inline.length > 0 || stored.some((c) => c.projectId === undefined || c.projectId === tc.repo.auth.projectId);
    return builtin && !own ? [...stored, builtin] : [...inline, ...stored];
  });
}

/** Rows of `tx_code_system` (stored resources of every project) matching `column = value`, cached. */
function cachedCodeSystems(tc: TermContext, column: 'url' | 'resource_id', value: string): Promise<CodeSystemInfo[]> {
  return terminologyCache(tc.db).resolve(`cs ${column} ${value}`, async () => {
    const res = await tc.db.query<CodeSystemRow>(`SELECT * FROM tx_code_system r WHERE r.${column} = $1 AND r.scope IS NULL`, [value]);
    return res.rows.map(toInfo);
  });
}

/**
 * Every stored code system the caller sees (url, version, content), request-scoped ones left
 * out — for the TerminologyCapabilities statement (docs/terminology.md#terminologycapabilities).
 */
export async function visibleCodeSystems(tc: TermContext): Promise<Array<{ url: string; version: string | undefined; content: string }>> {
  const vis = tc.repo.scope.predicate({ alias: 'r', project: 'project_id' }, 1);
  const res = await tc.db.query<{ url: string; version: string | null; content: string }>(
    `SELECT DISTINCT r.url, r.version, r.content FROM tx_code_system r WHERE r.scope IS NULL AND ${vis.sql}`,
    vis.params,
  );
  return res.rows.map((r) => ({ url: r.url, version: r.version ?? undefined, content: r.content }));
}

/** Those of `rows` the caller may see (its project's and shared content; super admins: all). */
function visible<T extends { projectId: string | undefined }>(tc: TermContext, rows: T[]): T[] {
  return rows.filter((r) => tc.repo.scope.canSee({ projectId: r.projectId ?? null }));
}

async function storedCodeSystems(tc: TermContext, url: string): Promise<CodeSystemInfo[]> {
  return visible(tc, await cachedCodeSystems(tc, 'url', url));
}

/** The indexed code system of a stored CodeSystem resource visible to the caller (instance-level calls). */
export async function codeSystemByResourceId(tc: TermContext, id: string): Promise<CodeSystemInfo | undefined> {
  return visible(tc, await cachedCodeSystems(tc, 'resource_id', id))[0];
}

/** Resolves a value set canonical for the caller; undefined when none is visible. */
export function resolveValueSet(tc: TermContext, canonical: string, version?: string): Promise<ValueSet | undefined> {
  // SNOMED CT's `?fhir_vs` forms (docs/terminology.md#implicit-value-sets); ECL may contain `|`.
  if (isImplicitValueSet(canonical)) {
    return memo(tc, `vs-implicit ${canonical}`, () => snomedImplicitValueSet(tc, canonical, (url, v) => resolveCodeSystem(tc, url, v)));
  }
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
    if (!chosen) return loincValueSet(tc, split.url, wanted);
    if ('vs' in chosen) return chosen.vs;
    // Its row is visible to the caller (checked above): the content is read once per version.
    return terminologyCache(tc.db).resolve(`vs content ${chosen.resourceId} ${chosen.lastUpdated}`, () =>
      tc.env.system.tryRead<ValueSet>('ValueSet', chosen.resourceId),
    );
  });
}

/**
 * The implicit value sets of a loaded code system that no stored value set overrides: LOINC's
 * `http://loinc.org/vs[/<LL or LP code>]` (docs/terminology.md#loinc), when the release has the code.
 */
async function loincValueSet(tc: TermContext, url: string, version: string | undefined): Promise<ValueSet | undefined> {
  const code = loincImplicitCode(url);
  if (code === undefined) return undefined;
  const cs = await resolveCodeSystem(tc, LOINC_URL, version);
  if (!cs) return undefined;
  let display: string | undefined;
  if (code) {
    const concept = (await providerFor(tc, cs).findConcepts([code])).get(code);
    if (!concept || concept.code !== code) return undefined;
    display = concept.display;
  }
  return loincImplicitValueSet(url, code, cs.version, display);
}

/**
 * A stored ValueSet by id, when the caller can see it (instance-level calls), from the cache;
 * undefined when it is not indexed or not visible (the caller then reads it for the exact error).
 */
export async function valueSetByResourceId(tc: TermContext, id: string): Promise<ValueSet | undefined> {
  const row = (await storedValueSets(tc, id, 'resource_id'))[0];
  if (!row) return undefined;
  return terminologyCache(tc.db).resolve(`vs content ${row.resourceId} ${row.lastUpdated}`, () => tc.env.system.tryRead<ValueSet>('ValueSet', row.resourceId));
}

async function storedValueSets(
  tc: TermContext,
  value: string,
  column: 'url' | 'resource_id' = 'url',
): Promise<Array<{ resourceId: string; projectId: string | undefined; version: string | undefined; lastUpdated: string }>> {
  const all = await terminologyCache(tc.db).resolve(`vs ${column} ${value}`, async () => {
    const res = await tc.db.query<{ resource_id: string; project_id: string | null; version: string | null; last_updated: string | Date }>(
      `SELECT r.resource_id, r.project_id, r.version, r.last_updated FROM tx_value_set r WHERE r.${column} = $1`,
      [value],
    );
    return res.rows.map((r) => ({
      resourceId: r.resource_id,
      projectId: r.project_id ?? undefined,
      version: r.version ?? undefined,
      lastUpdated: iso(r.last_updated),
    }));
  });
  return visible(tc, all);
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
  const tied = matching.filter((c) => tier(c) === best);
  // Without a version, a code system that holds concepts wins over one that only names the system
  // (`content: not-present` without concepts, such as the base entry of SNOMED CT): the newest
  // loaded edition answers (docs/terminology.md#snomed-ct).
  const loaded = version === undefined ? tied.filter((c) => hasConcepts(c)) : [];
  return newestFirst(loaded.length > 0 && loaded.length < tied.length ? loaded : tied)[0];
}

function hasConcepts(c: object): boolean {
  const info = c as Partial<CodeSystemInfo>;
  return info.content !== 'not-present' || (info.conceptCount ?? 0) > 0;
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
    ...(r.publication ? { publication: JSON.parse(r.publication) as CodeSystemInfo['publication'] } : {}),
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
