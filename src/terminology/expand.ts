import { randomUUID } from 'node:crypto';
import type { ValueSet, ValueSetComposeInclude, ValueSetExpansionContains, ValueSetExpansionParameter } from '@medplum/fhirtypes';
import { FhirError, badRequest, issue } from '../fhir/outcome.js';
import { UnknownValueSetError, ValueSetEvaluator, flatten, includeConditions, includeSystem, runQuery } from './compose.js';
import { conceptsByIds, designationsOf, indexOf } from './concepts.js';
import { compileInclude } from './filter-match.js';
import { preferredDisplay, type LanguagePrefs } from './display.js';
import { SqlParams } from './filters.js';
import { msg } from './messages.js';
import { toOutcomeIssue } from './issues.js';
import { codeSystemVersions, resolveCodeSystem } from './resolve.js';
import type { CodeSystemInfo, TermContext } from './types.js';
import { VERSION_RULE_PARAMETER, checkViolation, effectiveVersion } from './versions.js';

/**
 * `$expand` (docs/terminology.md#expand) — the one operation that builds an expansion. Each include
 * yields concept ids from the in-memory index (whole systems, concept lists, filters compiled
 * once, the text filter, active only; `TermContext.sqlReference`: one SQL query); ids of one code system are merged and excludes subtracted as id sets, so only the
 * requested page is ever turned into `contains` entries and `total` is the true total.
 */

export interface ExpandRequest {
  offset: number;
  count: number | undefined;
  filter: string | undefined;
  activeOnly: boolean;
  includeDesignations: boolean;
  includeDefinition: boolean;
  languages: LanguagePrefs;
  /** Parameters to echo in `expansion.parameter` (as given). */
  echo: ValueSetExpansionParameter[];
}

/** What an expansion drew on, echoed in `expansion.parameter`. */
interface Used {
  codeSystems: Set<string>;
  valueSets: Set<string>;
  /** Version parameters that decided the version of an include: `url|version` → parameter name. */
  versionRules: Map<string, string>;
}

/** Without `count`, larger expansions are refused rather than built (use paging). */
export const MAX_UNPAGED_EXPANSION = 10_000;

const EXT_EXPANSION_PROPERTY = 'http://hl7.org/fhir/5.0/StructureDefinition/extension-ValueSet.expansion.property';
const EXT_CONTAINS_PROPERTY = 'http://hl7.org/fhir/5.0/StructureDefinition/extension-ValueSet.expansion.contains.property';
const STATUS_URI = 'http://hl7.org/fhir/concept-properties#status';

/** Members of a value set from one code system (ids in document order) or listed for an unknown system. */
interface Group {
  system: string;
  cs?: CodeSystemInfo;
  ids?: number[];
  listed?: Array<{ code: string; display?: string }>;
}

/** Expands `vs` (a page of it) into a ValueSet with `expansion`. */
export async function expandValueSet(tc: TermContext, vs: ValueSet, req: ExpandRequest): Promise<ValueSet> {
  const used: Used = { codeSystems: new Set(), valueSets: new Set(), versionRules: new Map() };
  let groups: Group[];
  try {
    groups = await members(tc, new ValueSetEvaluator(tc, vs), req, used);
  } catch (err) {
    if (err instanceof UnknownValueSetError) throw badRequest(msg.unknownValueSet(err.url));
    throw err;
  }
  const total = groups.reduce((n, g) => n + (g.ids?.length ?? g.listed?.length ?? 0), 0);
  if (req.count === undefined && total > MAX_UNPAGED_EXPANSION) {
    throw new FhirError(422, [issue('too-costly', `ValueSet expansion has ${total} codes: more than ${MAX_UNPAGED_EXPANSION}; use count and offset`)]);
  }
  const contains = await page(tc, groups, req.offset, req.count ?? total, req, severalVersions(vs, groups));
  const parameter: ValueSetExpansionParameter[] = [
    ...req.echo,
    ...[...used.versionRules].map(([canonical, name]) => ({ name, valueUri: canonical })),
    ...[...used.codeSystems].map((v) => ({ name: 'used-codesystem', valueUri: v })),
    ...[...used.valueSets].map((v) => ({ name: 'used-valueset', valueUri: v })),
  ];
  const expansion: NonNullable<ValueSet['expansion']> = {
    identifier: `urn:uuid:${randomUUID()}`,
    timestamp: new Date().toISOString(),
    total,
    offset: req.offset,
    ...(parameter.length > 0 ? { parameter } : {}),
    ...(contains.length > 0 ? { contains } : {}),
  };
  if (contains.some((c) => c.extension?.some((e) => e.url === EXT_CONTAINS_PROPERTY))) {
    expansion.extension = [
      { url: EXT_EXPANSION_PROPERTY, extension: [{ url: 'code', valueCode: 'status' }, { url: 'uri', valueUri: STATUS_URI }] },
    ];
  }
  // The definition (compose) is not repeated: the expansion is the answer, and the compose may
  // name contained or request-supplied value sets the client cannot resolve anyway.
  const { meta: _meta, text: _text, expansion: _old, compose: _compose, ...rest } = vs;
  return { ...rest, expansion };
}

async function members(tc: TermContext, ev: ValueSetEvaluator, req: ExpandRequest, used: Used): Promise<Group[]> {
  const vs = ev.vs;
  if (!vs.compose) {
    const bySystem = new Map<string, Group>();
    for (const c of flatten(vs.expansion?.contains)) {
      if (!c.system || !c.code) continue;
      if (req.filter && !textMatches(c.display, req.filter)) continue;
      const g = bySystem.get(c.system) ?? { system: c.system, listed: [] };
      g.listed?.push({ code: c.code, display: c.display });
      bySystem.set(c.system, g);
    }
    return [...bySystem.values()];
  }
  const activeOnly = req.activeOnly || vs.compose.inactive === false;
  let result: Group[] = [];
  for (const [i, inc] of (vs.compose.include ?? []).entries()) {
    result = union(result, await includeGroups(tc, ev, inc, `ValueSet.compose.include[${i}]`, req, activeOnly, used));
  }
  for (const [i, exc] of (vs.compose.exclude ?? []).entries()) {
    if (result.length === 0) break;
    const noText = { ...req, filter: undefined };
    result = subtract(result, await includeGroups(tc, ev, exc, `ValueSet.compose.exclude[${i}]`, noText, false, { codeSystems: new Set(), valueSets: new Set(), versionRules: new Map() }));
  }
  return result;
}

async function includeGroups(
  tc: TermContext,
  ev: ValueSetEvaluator,
  inc: ValueSetComposeInclude,
  path: string,
  req: ExpandRequest,
  activeOnly: boolean,
  used: Used,
): Promise<Group[]> {
  let nested: Group[] | undefined;
  for (const ref of inc.valueSet ?? []) {
    const child = await ev.nested(ref);
    if (!ref.startsWith('#') && child.vs.url) used.valueSets.add(child.vs.version ? `${child.vs.url}|${child.vs.version}` : child.vs.url);
    const groups = await members(tc, child, req, used);
    nested = nested === undefined ? groups : intersect(nested, groups);
  }
  const pinned = includeSystem(inc);
  if (!pinned.system) return nested ?? [];

  const effective = effectiveVersion(tc.versionRules, pinned.system, pinned.version);
  if (effective.source !== undefined && effective.source !== 'include' && effective.version !== undefined) {
    used.versionRules.set(`${pinned.system}|${effective.version}`, VERSION_RULE_PARAMETER[effective.source]);
  }
  const cs = await resolveCodeSystem(tc, pinned.system, effective.version);
  if (!cs && effective.version !== undefined) {
    const known = await codeSystemVersions(tc, pinned.system);
    if (known.length > 0) throw expansionError('not-found', 'not-found', 'UNKNOWN_CODESYSTEM_VERSION_EXP', msg.cannotExpandVersion(pinned.system, effective.version, known));
  }
  const violated = cs ? checkViolation(tc.versionRules, cs.url, cs.version) : undefined;
  if (cs && violated !== undefined) {
    throw expansionError('exception', 'version-error', 'VALUESET_VERSION_CHECK', msg.versionNotAllowed(cs.version ?? '', cs.url, violated));
  }
  if (!cs) {
    if (!inc.concept) throw badRequest(msg.cannotExpand(inc.system as string));
    const listed = inc.concept.filter((c) => !req.filter || textMatches(c.display, req.filter)).map((c) => ({ code: c.code, display: c.display }));
    const group: Group = { system: pinned.system, listed };
    return nested ? intersect([group], nested) : [group];
  }
  used.codeSystems.add(cs.version ? `${cs.url}|${cs.version}` : cs.url);
  const allowed = nested ? nested.filter((g) => g.cs?.key === cs.key).flatMap((g) => g.ids ?? []) : undefined;
  if (!tc.sqlReference) return [{ system: cs.url, cs, ids: await includeIdsInMemory(tc, cs, inc, path, activeOnly, req.filter, allowed) }];
  const p = new SqlParams();
  const conditions = [`c.cs_key = ${p.add(cs.key)}`, ...(await includeConditions(tc, cs, inc, path, p, activeOnly))];
  if (req.filter) conditions.push(textCondition(req.filter, p));
  if (allowed) conditions.push(`c.id = ANY(${p.add(allowed)}::int[])`);
  const rows = (await runQuery(tc, `SELECT c.id FROM tx_concept c WHERE ${conditions.join(' AND ')} ORDER BY c.id`, p.values)).rows;
  return [{ system: cs.url, cs, ids: rows.map((r) => (r as { id: number }).id) }];
}

/**
 * The ids an include selects (ascending), from the in-memory index: the compiled include
 * (filter-match.ts), the text filter on display and designations, and the nested value sets' ids.
 */
async function includeIdsInMemory(
  tc: TermContext,
  cs: CodeSystemInfo,
  inc: ValueSetComposeInclude,
  path: string,
  activeOnly: boolean,
  text: string | undefined,
  allowed: number[] | undefined,
): Promise<number[]> {
  const index = await indexOf(tc, cs);
  const match = await compileInclude(tc, cs, index, inc, path, activeOnly);
  const words = text ? wordPrefix(text) : undefined;
  const textMatch = (id: number) => !words || words.test(index.display(id) ?? '') || index.designations(id).some((d) => words.test(d.value));
  const out: number[] = [];
  if (allowed) {
    for (const id of [...new Set(allowed)].sort((a, b) => a - b)) if (index.has(id) && match(id) && textMatch(id)) out.push(id);
    return out;
  }
  for (let id = 1; id <= index.maxId; id++) if (index.has(id) && match(id) && textMatch(id)) out.push(id);
  return out;
}

/** The text filter as in SQL (textCondition): the text at the start of a word, ignoring case. */
function wordPrefix(text: string): RegExp {
  return new RegExp(`(^|[^\\p{L}\\p{N}])${text.replace(/[\\.^$|?*+()[\]{}]/g, '\\$&')}`, 'iu');
}

/** A 400 whose one issue carries the tx-ecosystem issue type and message id (docs/terminology.md#version-parameters). */
function expansionError(code: string, type: string, id: string, text: string): FhirError {
  return new FhirError(400, [toOutcomeIssue({ severity: 'error', code, type, id, text })]);
}

/** Word-prefix, case-insensitive match of the `filter` text on the display and the designations. */
function textCondition(text: string, p: SqlParams): string {
  const re = p.add(`(^|[^[:alnum:]])${text.replace(/[\\.^$|?*+()[\]{}]/g, '\\$&')}`);
  return `(c.display ~* ${re} OR EXISTS (SELECT 1 FROM tx_designation d WHERE d.cs_key = c.cs_key AND d.concept = c.id AND d.value ~* ${re}))`;
}

function textMatches(display: string | undefined, text: string): boolean {
  const t = text.toLowerCase();
  return (display ?? '').toLowerCase().split(/[^\p{L}\p{N}]+/u).some((w) => w.startsWith(t)) || (display ?? '').toLowerCase().startsWith(t);
}

const groupKey = (g: Group) => (g.cs ? `#${g.cs.key}` : `s ${g.system}`);

/** Union of member groups (ids of one code system merged, document order kept). */
function union(a: Group[], b: Group[]): Group[] {
  const out = new Map<string, Group>(a.map((g) => [groupKey(g), { ...g }]));
  for (const g of b) {
    const existing = out.get(groupKey(g));
    if (!existing) out.set(groupKey(g), { ...g });
    else if (existing.ids && g.ids) existing.ids = [...new Set([...existing.ids, ...g.ids])].sort((x, y) => x - y);
    else if (existing.listed && g.listed) {
      const seen = new Set(existing.listed.map((c) => c.code));
      existing.listed = [...existing.listed, ...g.listed.filter((c) => !seen.has(c.code))];
    }
  }
  return [...out.values()];
}

function intersect(a: Group[], b: Group[]): Group[] {
  const other = new Map(b.map((g) => [groupKey(g), g]));
  const out: Group[] = [];
  for (const g of a) {
    const h = other.get(groupKey(g));
    if (!h) continue;
    if (g.ids && h.ids) {
      const keep = new Set(h.ids);
      out.push({ ...g, ids: g.ids.filter((id) => keep.has(id)) });
    } else if (g.listed && h.listed) {
      const keep = new Set(h.listed.map((c) => c.code));
      out.push({ ...g, listed: g.listed.filter((c) => keep.has(c.code)) });
    }
  }
  return out;
}

function subtract(a: Group[], b: Group[]): Group[] {
  const other = new Map(b.map((g) => [groupKey(g), g]));
  return a.map((g) => {
    const h = other.get(groupKey(g));
    if (!h) return g;
    if (g.ids && h.ids) {
      const drop = new Set(h.ids);
      return { ...g, ids: g.ids.filter((id) => !drop.has(id)) };
    }
    const drop = new Set((h.listed ?? []).map((c) => c.code));
    return { ...g, listed: (g.listed ?? []).filter((c) => !drop.has(c.code)) };
  });
}

/**
 * Systems whose `contains` entries name their version: the value set includes the system at
 * several versions (its includes state different ones), or the expansion holds several.
 */
function severalVersions(vs: ValueSet, groups: Group[]): Set<string> {
  const versions = new Map<string, Set<string | undefined>>();
  const add = (system: string, version: string | undefined) => versions.set(system, (versions.get(system) ?? new Set()).add(version));
  for (const inc of vs.compose?.include ?? []) {
    const { system, version } = includeSystem(inc);
    if (system) add(system, version);
  }
  const out = new Set([...versions].filter(([, v]) => v.size > 1).map(([system]) => system));
  const keys = new Map<string, Set<number>>();
  for (const g of groups) if (g.cs) keys.set(g.system, (keys.get(g.system) ?? new Set()).add(g.cs.key));
  for (const [system, k] of keys) if (k.size > 1) out.add(system);
  return out;
}

/** Builds the `contains` entries of one page (only these concepts are read). */
async function page(
  tc: TermContext,
  groups: Group[],
  offset: number,
  count: number,
  req: ExpandRequest,
  withVersion: Set<string>,
): Promise<ValueSetExpansionContains[]> {
  const out: ValueSetExpansionContains[] = [];
  let skip = offset;
  for (const g of groups) {
    if (out.length >= count) break;
    const size = g.ids?.length ?? g.listed?.length ?? 0;
    if (skip >= size) {
      skip -= size;
      continue;
    }
    const take = Math.min(size - skip, count - out.length);
    if (g.cs && g.ids) out.push(...(await conceptEntries(tc, g.cs, g.ids.slice(skip, skip + take), req, withVersion.has(g.system))));
    else for (const c of (g.listed ?? []).slice(skip, skip + take)) out.push({ system: g.system, code: c.code, ...(c.display ? { display: c.display } : {}) });
    skip = 0;
  }
  return out;
}

async function conceptEntries(tc: TermContext, cs: CodeSystemInfo, ids: number[], req: ExpandRequest, withVersion: boolean): Promise<ValueSetExpansionContains[]> {
  const concepts = await conceptsByIds(tc, cs, ids);
  const designations = await designationsOf(tc, cs, ids);
  return concepts.map((c) => {
    const ds = designations.get(c.id) ?? [];
    const entry: ValueSetExpansionContains = { system: cs.url, ...(withVersion && cs.version ? { version: cs.version } : {}), code: c.code };
    if (c.abstract) entry.abstract = true;
    if (c.inactive) entry.inactive = true;
    const display = preferredDisplay(cs, c, ds, req.languages);
    if (display) entry.display = display;
    if (req.includeDesignations && ds.length > 0) {
      entry.designation = ds.map((d) => ({ ...(d.language ? { language: d.language } : {}), ...(d.use ? { use: d.use } : {}), value: d.value }));
    }
    if (c.status) {
      entry.extension = [
        { url: EXT_CONTAINS_PROPERTY, extension: [{ url: 'code', valueCode: 'status' }, { url: 'value', valueCode: c.status }] },
      ];
    }
    return entry;
  });
}
