import { randomUUID } from 'node:crypto';
import type { ValueSet, ValueSetComposeInclude, ValueSetComposeIncludeConcept, ValueSetExpansionContains, ValueSetExpansionParameter } from '@medplum/fhirtypes';
import { EXTENSION_PROPERTY_URIS, designationExtensions, extensionRows, isExtensionProperty } from '../providers/concept-extensions.js';
import { FhirError, issue } from '../../fhir/outcome.js';
import { UnknownValueSetError, ValueSetEvaluator, flatten, includeSystem } from './compose.js';
import { textFilterMatcher } from '../providers/filters.js';
import { supplementsOf, type CodeSystemProvider } from '../providers/provider.js';
import { providerFor } from '../providers/select.js';
import { chooseDisplay, designationsFor, type LanguagePrefs } from './display.js';
import { msg, valueSetText } from '../messages.js';
import { toOutcomeIssue } from '../issues.js';
import { codeSystemVersions, resolveCodeSystem, resolveValueSet } from './resolve.js';
import type { CodeSystemInfo, Designation, StoredProperty, TermContext } from '../types.js';
import { StatusReport, valueSetPublication } from './status.js';
import { VERSION_RULE_PARAMETER, checkViolation, effectiveVersion, NO_VERSION_RULES } from '../versions.js';
import { withCallerPaths } from './caller-paths.js';

/**
 * `$expand` (docs/terminology.md#expand) — the one operation that builds an expansion. Each include
 * asks its code system's provider for the concept ids it selects (whole systems, concept lists,
 * filters, the text filter, active only); ids of one code system are merged and excludes
 * subtracted as id sets, so only the requested page is ever turned into `contains` entries and
 * `total` is the true total.
 */

export interface ExpandRequest {
  offset: number;
  count: number | undefined;
  /** `offset` or `count` was given. */
  paged?: boolean;
  filter: string | undefined;
  activeOnly: boolean;
  includeDesignations: boolean;
  includeDefinition: boolean;
  /** Leave out concepts not for user interfaces (abstract / notSelectable). */
  excludeNotForUI?: boolean;
  /** Past the size limit without `count`: answer the first codes (marked too costly) instead of refusing. */
  limitedExpansion?: boolean;
  /** Hierarchical `contains` unless true (docs/terminology.md#expand). */
  excludeNested?: boolean;
  /** `property`: concept properties to return per entry (`definition`, a code system property, …). */
  properties?: string[];
  /** `designation`: which designations to return, `system|code` of a use or `urn:ietf:bcp:47|<language>`. */
  designations?: string[];
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
  /** The status of the code systems and value sets used (docs/terminology.md#status-of-the-resources-used). */
  statuses: StatusReport;
  /** A code system that holds only part of its codes (a fragment) contributed: the expansion is not closed. */
  unclosed: boolean;
  /** Why it is not closed, when a grammar's common codes stood for the grammar (`valueset-unclosed-reason`). */
  unclosedReasons: Set<string>;
  /**
   * Codes listed for a whole grammar from its common codes: the value set has no finite total,
   * and they do not count towards the size limit (docs/terminology.md#expanding-a-grammar).
   */
  uncounted: number;
  /** The fragments that contributed: `url|version` → url (docs/terminology.md#expand). */
  fragments: Map<string, string>;
}

function newUsed(): Used {
  return { codeSystems: new Set(), valueSets: new Set(), versionRules: new Map(), statuses: new StatusReport(), unclosed: false, unclosedReasons: new Set(), uncounted: 0, fragments: new Map() };
}

const UNCLOSED_EXTENSION = 'http://hl7.org/fhir/StructureDefinition/valueset-unclosed';
const UNCLOSED_REASON_EXTENSION = 'http://hl7.org/fhir/StructureDefinition/valueset-unclosed-reason';
const MESSAGE_ID = 'http://hl7.org/fhir/StructureDefinition/operationoutcome-message-id';

/** The 422 of an expansion larger than the limit without paging (docs/terminology.md#expand). */
function tooCostlyError(vs: string, limit: number): FhirError {
  return new FhirError(422, [{ extension: [{ url: MESSAGE_ID, valueString: 'VALUESET_TOO_COSTLY' }], ...issue('too-costly', msg.expansionTooCostly(vs, limit)) }]);
}

/** Without `count`, larger expansions are refused rather than built (use paging). */
export const MAX_UNPAGED_EXPANSION = 1000;
const TOO_COSTLY_EXTENSION = 'http://hl7.org/fhir/StructureDefinition/valueset-toocostly';

const EXT_EXPANSION_PROPERTY = 'http://hl7.org/fhir/5.0/StructureDefinition/extension-ValueSet.expansion.property';
const EXT_CONTAINS_PROPERTY = 'http://hl7.org/fhir/5.0/StructureDefinition/extension-ValueSet.expansion.contains.property';
const CONCEPT_PROPERTIES = 'http://hl7.org/fhir/concept-properties';
const LANGUAGE_SYSTEM = 'urn:ietf:bcp:47';

/** Members of a value set from one code system (ids in document order) or listed for an unknown system. */
interface Group {
  system: string;
  cs?: CodeSystemInfo;
  ids?: number[];
  listed?: Array<{ code: string; display?: string }>;
}

/** Expands `vs` (a page of it) into a ValueSet with `expansion`. */
export function expandValueSet(tc: TermContext, vs: ValueSet, request: ExpandRequest): Promise<ValueSet> {
  return withCallerPaths(vs, () => expand(tc, vs, request));
}

async function expand(tc: TermContext, vs: ValueSet, request: ExpandRequest): Promise<ValueSet> {
  let req = request;
  const used = newUsed();
  used.statuses.valueSet(vs, 'self');
  let groups: Group[];
  try {
    groups = await members(tc, new ValueSetEvaluator(tc, vs), req, used);
  } catch (err) {
    if (err instanceof UnknownValueSetError) {
      const pinned = err.url.includes('|');
      throw expansionError('not-found', 'not-found', pinned ? 'VS_EXP_IMPORT_UNK_PINNED' : 'VS_EXP_IMPORT_UNK', msg.unknownImport(err.url));
    }
    throw err;
  }
  if (req.excludeNotForUI) groups = await selectable(tc, groups);
  const withVersion = versionedSystems(vs);
  groups = await oneVersionPerCode(tc, groups, withVersion);
  const total = groups.reduce((n, g) => n + (g.ids?.length ?? g.listed?.length ?? 0), 0);
  // Without `count`, an expansion larger than the limit is refused, or cut to the limit with
  // `limitedExpansion` (and marked as incomplete): docs/terminology.md#expand.
  // A whole grammar's common codes are a fixed list, given whole (docs/terminology.md#expanding-a-grammar).
  const tooCostly = req.count === undefined && total - used.uncounted > MAX_UNPAGED_EXPANSION;
  if (tooCostly && !req.limitedExpansion) {
    throw tooCostlyError(valueSetText(vs), MAX_UNPAGED_EXPANSION);
  }
  if (tooCostly) req = { ...req, count: MAX_UNPAGED_EXPANSION, excludeNested: true };
  const declared = new Map<string, string | undefined>();
  // Nested only when the whole expansion is returned and the value set selects whole systems or
  // by one filter: an enumeration, an import and a combination of filters stay flat
  // (docs/terminology.md#expand).
  const nest = !req.excludeNested && req.offset === 0 && (req.count === undefined || req.count >= total) && !flatDefinition(vs);
  // Concepts the value set lists: their display, designations and extensions apply.
  const listed = new Map<string, ValueSetComposeIncludeConcept>();
  for (const inc of vs.compose?.include ?? []) for (const c of inc.concept ?? []) if (inc.system && c.code) listed.set(`${includeSystem(inc).system}\u0000${c.code}`, c);
  const contains = await page(tc, groups, req.offset, req.count ?? total, { req, declared, listed, withVersion }, nest);
  const supplements = [...new Set(groups.flatMap((g) => (g.cs ? supplementsOf(tc, g.cs) : [])))];
  const parameter: ValueSetExpansionParameter[] = [
    ...req.echo,
    ...[...used.versionRules].map(([canonical, name]) => ({ name, valueUri: canonical })),
    ...[...(tc.versionRules?.appliedValueSetDefaults ?? [])].map((canonical) => ({ name: 'default-valueset-version', valueUri: canonical })),
    ...[...used.codeSystems].map((v) => ({ name: 'used-codesystem', valueUri: v })),
    ...[...used.fragments.keys()].map((v) => ({ name: 'used-fragment', valueUri: v })),
    ...[...used.valueSets].map((v) => ({ name: 'used-valueset', valueUri: v })),
    ...supplements.map((s) => ({ name: 'used-supplement', valueUri: s.version ? `${s.url}|${s.version}` : s.url })),
    ...used.statuses.parameters(),
  ];
  const expansion: NonNullable<ValueSet['expansion']> = {
    identifier: `urn:uuid:${randomUUID()}`,
    timestamp: new Date().toISOString(),
    ...(used.uncounted > 0 ? {} : { total }),
    // `offset` belongs to paging: present when the request paged (offset or count given).
    ...(req.paged ? { offset: req.offset } : {}),
    ...(parameter.length > 0 ? { parameter } : {}),
    ...(contains.length > 0 ? { contains } : {}),
  };
  if (tooCostly) expansion.extension = [{ url: TOO_COSTLY_EXTENSION, valueBoolean: true }];
  if (used.unclosed) {
    expansion.extension = [
      ...(expansion.extension ?? []),
      { url: UNCLOSED_EXTENSION, valueBoolean: true },
      ...[...used.unclosedReasons].map((valueString) => ({ url: UNCLOSED_REASON_EXTENSION, valueString })),
    ];
  }
  for (const url of new Set(used.fragments.values())) {
    expansion.extension = [...(expansion.extension ?? []), { url: UNCLOSED_REASON_EXTENSION, valueString: msg.fragmentExpansion(url) }];
  }
  if (declared.size > 0) {
    expansion.extension = [...(expansion.extension ?? []), ...[...declared].map(([code, uri]) => ({
      url: EXT_EXPANSION_PROPERTY,
      extension: [{ url: 'code', valueCode: code }, ...(uri ? [{ url: 'uri', valueUri: uri }] : [])],
    }))];
  }
  // The definition (compose) is not repeated: the expansion is the answer, and the compose may
  // name contained or request-supplied value sets the client cannot resolve anyway. Its
  // descriptive elements and extensions come back only with includeDefinition
  // (docs/terminology.md#expand).
  const { meta: _meta, text: _text, expansion: _old, compose: _compose, ...rest } = vs;
  if (!req.includeDefinition) {
    for (const k of DEFINITION_ELEMENTS) delete (rest as Record<string, unknown>)[k];
  }
  return { ...rest, expansion };
}

/** Elements of the value set's definition an expansion leaves out unless `includeDefinition` is true. */
const DEFINITION_ELEMENTS = ['extension', 'purpose', 'description', 'contact', 'copyright', 'publisher'];

/** A definition whose expansion is flat: an include or exclude that lists concepts, imports value sets or combines filters. */
function flatDefinition(vs: ValueSet): boolean {
  const flat = (inc: ValueSetComposeInclude) => inc.concept !== undefined || inc.valueSet !== undefined || (inc.filter?.length ?? 0) > 1;
  return (vs.compose?.include ?? []).some(flat) || (vs.compose?.exclude ?? []).some(flat);
}

/** The groups without their abstract (notSelectable) concepts. */
async function selectable(tc: TermContext, groups: Group[]): Promise<Group[]> {
  const out: Group[] = [];
  for (const g of groups) {
    if (!g.cs || !g.ids) {
      out.push(g);
      continue;
    }
    const abstract = new Set((await providerFor(tc, g.cs).conceptsByIds(g.ids)).filter((c) => c.abstract).map((c) => c.id));
    out.push({ ...g, ids: g.ids.filter((id) => !abstract.has(id)) });
  }
  return out;
}

async function members(tc: TermContext, ev: ValueSetEvaluator, req: ExpandRequest, used: Used): Promise<Group[]> {
  const vs = ev.vs;
  if (!vs.compose && !vs.expansion) {
    throw expansionError('invalid', 'vs-invalid', 'VS_EXP_NO_COMPOSE', msg.noDefinition(valueSetText(vs)));
  }
  if (!vs.compose) {
    const matches = req.filter ? textFilterMatcher(req.filter) : undefined;
    const bySystem = new Map<string, Group>();
    for (const c of flatten(vs.expansion?.contains)) {
      if (!c.system || !c.code) continue;
      if (matches && !matches(c.code, [c.display ?? ''])) continue;
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
    const excluded = newUsed();
    for (const variant of acrossVersions(exc, result)) {
      result = subtract(result, await includeGroups(tc, ev, variant, `ValueSet.compose.exclude[${i}]`, noText, false, excluded));
    }
    used.statuses.merge(excluded.statuses);
  }
  return result;
}

/**
 * An exclude that names no version of its system removes its codes from every version of the
 * system the expansion holds (docs/terminology.md#expand): one exclude per version when the
 * includes drew on several; otherwise the exclude as written (its version decided as an
 * include's is).
 */
function acrossVersions(exc: ValueSetComposeInclude, result: Group[]): ValueSetComposeInclude[] {
  const { system, version } = includeSystem(exc);
  if (!system || version !== undefined) return [exc];
  const versions = [...new Set(result.filter((g) => g.system === system && g.cs?.version !== undefined).map((g) => g.cs?.version as string))];
  return versions.length > 1 ? versions.map((v) => ({ ...exc, version: v })) : [exc];
}

/**
 * The members of a nested value set, computed once per expansion (compose.ts#Evaluation): in a
 * graph where value sets include each other in a diamond, every later path reuses the answer,
 * and what it drew on is added to `used` again.
 */
async function nestedMembers(tc: TermContext, child: ValueSetEvaluator, req: ExpandRequest, used: Used): Promise<Group[]> {
  const purpose = req.filter === undefined ? 'expand' : `expand filter ${req.filter}`;
  const answer = await child.evaluation.once(child.identity, purpose, async () => {
    const own = newUsed();
    return { groups: await members(tc, child, req, own), used: own };
  });
  for (const v of answer.used.codeSystems) used.codeSystems.add(v);
  for (const v of answer.used.valueSets) used.valueSets.add(v);
  for (const [k, v] of answer.used.versionRules) used.versionRules.set(k, v);
  used.statuses.merge(answer.used.statuses);
  if (answer.used.unclosed) used.unclosed = true;
  for (const r of answer.used.unclosedReasons) used.unclosedReasons.add(r);
  used.uncounted += answer.used.uncounted;
  for (const [k, v] of answer.used.fragments) used.fragments.set(k, v);
  return answer.groups;
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
    used.statuses.valueSet(child.vs, valueSetPublication(ev.vs));
    const groups = await nestedMembers(tc, child, req, used);
    nested = nested === undefined ? groups : intersect(nested, groups);
  }
  const pinned = includeSystem(inc);
  if (!pinned.system) return nested ?? [];

  const effective = effectiveVersion(tc.versionRules ?? NO_VERSION_RULES, pinned.system, pinned.version);
  if (effective.source !== undefined && effective.source !== 'include' && effective.version !== undefined) {
    used.versionRules.set(`${pinned.system}|${effective.version}`, VERSION_RULE_PARAMETER[effective.source]);
  }
  const cs = await resolveCodeSystem(tc, pinned.system, effective.version);
  if (!cs && effective.version !== undefined) {
    const known = await codeSystemVersions(tc, pinned.system);
    if (known.length > 0) throw expansionError('not-found', 'not-found', 'UNKNOWN_CODESYSTEM_VERSION_EXP', msg.cannotExpandVersion(pinned.system, effective.version, known));
  }
  const violated = cs ? checkViolation(tc.versionRules ?? NO_VERSION_RULES, cs.url, cs.version) : undefined;
  if (cs && violated !== undefined) {
    throw expansionError('exception', 'version-error', 'VALUESET_VERSION_CHECK', msg.versionNotAllowed(cs.version ?? '', cs.url, violated));
  }
  // An unknown code system cannot be expanded, whether the include names concepts or not:
  // nothing can say whether they exist or what they display (docs/terminology.md#expand).
  if (!cs) throw expansionError('not-found', 'not-found', 'UNKNOWN_CODESYSTEM_EXP', msg.cannotExpand(pinned.system));
  used.codeSystems.add(cs.version ? `${cs.url}|${cs.version}` : cs.url);
  used.statuses.codeSystem(cs, valueSetPublication(ev.vs));
  const provider = providerFor(tc, cs);
  // A fragment, or an include of a code system with a grammar (SNOMED CT's postcoordinated
  // expressions) that can admit members no expansion lists: the expansion says it is not
  // closed, and why when it includes the whole system (a grammar with common codes says why
  // with them, below).
  if (cs.content === 'fragment') used.unclosed = true;
  else if (provider.grammar && (provider.unclosedInclude?.(inc) ?? true)) {
    used.unclosed = true;
    if (!inc.concept && !inc.filter?.length && !provider.commonCodes) used.unclosedReasons.add(msg.grammarUnclosed(cs.url));
  }
  if (cs.content === 'fragment') used.fragments.set(cs.version ? `${cs.url}|${cs.version}` : cs.url, cs.url);
  let allowed = nested ? nested.filter((g) => g.cs?.key === cs.key).flatMap((g) => g.ids ?? []) : undefined;
  if (!allowed && !inc.concept && provider.commonCodes) allowed = await commonCodes(tc, ev, provider, cs, provider.commonCodes, !inc.filter?.length, used);
  const ids = await provider.enumerate({ include: inc, path, activeOnly, text: req.filter }, allowed);
  // A filter that alone selects more than an unpaged expansion may hold is refused as such, the
  // value set named by its url (docs/terminology.md#expand).
  if (req.count === undefined && !req.limitedExpansion && (inc.filter?.length ?? 0) > 0 && !provider.commonCodes && ids.length > MAX_UNPAGED_EXPANSION) {
    throw tooCostlyError(ev.vs.url ?? valueSetText(ev.vs), MAX_UNPAGED_EXPANSION);
  }
  return [{ system: cs.url, cs, ids }];
}

/**
 * A grammar's common codes, standing for the grammar in an include of the whole system or by a
 * filter: the codes of the system the value set lists, in code order (by character code). The
 * expansion is marked not closed with the reason; for the whole system it has no total and the
 * value set's status is reported (docs/terminology.md#expanding-a-grammar). Without the value
 * set, the provider refuses the include as it would without common codes.
 */
async function commonCodes(tc: TermContext, ev: ValueSetEvaluator, provider: CodeSystemProvider, cs: CodeSystemInfo, url: string, whole: boolean, used: Used): Promise<number[] | undefined> {
  const common = await resolveValueSet(tc, url);
  if (!common) return undefined;
  const listed = new Set<string>();
  for (const inc of common.compose?.include ?? []) if (inc.system === cs.url) for (const c of inc.concept ?? []) listed.add(c.code);
  for (const c of flatten(common.expansion?.contains)) if (c.system === cs.url && c.code) listed.add(c.code);
  const codes = [...listed].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const found = await provider.findConcepts(codes);
  used.unclosed = true;
  used.unclosedReasons.add(msg.grammarCommonCodes(cs.url, url));
  const ids = codes.flatMap((code) => {
    const concept = found.get(code);
    return concept ? [concept.id] : [];
  });
  if (whole) {
    used.uncounted += ids.length;
    used.statuses.valueSet(common, valueSetPublication(ev.vs));
  }
  return ids;
}

/** A 400 whose one issue carries the tx-ecosystem issue type and message id (docs/terminology.md#version-parameters). */
function expansionError(code: string, type: string, id: string, text: string): FhirError {
  return new FhirError(400, [toOutcomeIssue({ severity: 'error', code, type, id, text })]);
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
 * Systems whose `contains` entries name their version: the value set's own includes and excludes
 * state different versions of the system (docs/terminology.md#expand).
 */
function versionedSystems(vs: ValueSet): Set<string> {
  const versions = new Map<string, Set<string | undefined>>();
  const add = (system: string, version: string | undefined) => versions.set(system, (versions.get(system) ?? new Set()).add(version));
  for (const inc of [...(vs.compose?.include ?? []), ...(vs.compose?.exclude ?? [])]) {
    const { system, version } = includeSystem(inc);
    if (system) add(system, version);
  }
  return new Set([...versions].filter(([, v]) => v.size > 1).map(([system]) => system));
}

/**
 * An expansion whose entries do not name their version (the value set itself does not state
 * several versions of the system, e.g. it imports value sets that do) holds each code of a
 * system once: the first version that has it, in document order (docs/terminology.md#expand).
 */
async function oneVersionPerCode(tc: TermContext, groups: Group[], withVersion: Set<string>): Promise<Group[]> {
  const keys = new Map<string, Set<number>>();
  for (const g of groups) if (g.cs) keys.set(g.system, (keys.get(g.system) ?? new Set()).add(g.cs.key));
  const several = new Set([...keys].filter(([system, k]) => k.size > 1 && !withVersion.has(system)).map(([system]) => system));
  if (several.size === 0) return groups;
  const seen = new Map<string, Set<string>>();
  const out: Group[] = [];
  for (const g of groups) {
    if (!g.cs || !g.ids || !several.has(g.system)) {
      out.push(g);
      continue;
    }
    const codes = seen.get(g.system);
    const concepts = await providerFor(tc, g.cs).conceptsByIds(g.ids);
    const keep = codes ? concepts.filter((c) => !codes.has(c.code)) : concepts;
    const mine = codes ?? new Set<string>();
    for (const c of keep) mine.add(c.code);
    seen.set(g.system, mine);
    out.push(codes ? { ...g, ids: keep.map((c) => c.id) } : g);
  }
  return out;
}

/**
 * Builds the `contains` entries of one page (only these concepts are read). With `nest`, each
 * concept goes under its nearest ancestor in the expansion (the whole expansion is one page then).
 */
async function page(
  tc: TermContext,
  groups: Group[],
  offset: number,
  count: number,
  ctx: EntryContext,
  nest: boolean,
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
    if (g.cs && g.ids) {
      const ids = g.ids.slice(skip, skip + take);
      const provider = providerFor(tc, g.cs);
      const entries = await conceptEntries(tc, provider, ids, ctx);
      out.push(...(nest && !provider.flatExpansions ? await nested(provider, ids, entries) : entries));
    } else for (const c of (g.listed ?? []).slice(skip, skip + take)) out.push({ system: g.system, code: c.code, ...(c.display ? { display: c.display } : {}) });
    skip = 0;
  }
  return out;
}

/** Puts each entry under the entry of its nearest ancestor among `ids` (entries[i] is ids[i]). */
async function nested(provider: CodeSystemProvider, ids: number[], entries: ValueSetExpansionContains[]): Promise<ValueSetExpansionContains[]> {
  const ancestors = await ancestorsWithin(provider, ids);
  if (ancestors.size === 0) return entries;
  const byId = new Map(ids.map((id, i) => [id, entries[i]]));
  const roots: ValueSetExpansionContains[] = [];
  ids.forEach((id, i) => {
    const parent = ancestors.get(id)?.[0];
    const holder = parent === undefined ? undefined : byId.get(parent);
    if (holder) (holder.contains ??= []).push(entries[i]);
    else roots.push(entries[i]);
  });
  return roots;
}

/** What building `contains` entries needs besides the concepts. */
interface EntryContext {
  req: ExpandRequest;
  /** Expansion properties used so far (code → uri), declared in `expansion`. */
  declared: Map<string, string | undefined>;
  /** The value set's `include.concept` entries, by `system NUL code`. */
  listed: Map<string, ValueSetComposeIncludeConcept>;
  /** Systems whose entries name their version (see severalVersions). */
  withVersion: Set<string>;
}

/** Value-set concept extensions repeated on the expansion entry (valueset-concept-definition only with includeDefinition). */
const ECHOED_CONCEPT_EXTENSIONS = new Set([
  'http://hl7.org/fhir/StructureDefinition/valueset-deprecated',
  'http://hl7.org/fhir/StructureDefinition/rendering-style',
  'http://hl7.org/fhir/StructureDefinition/rendering-xhtml',
]);
const CONCEPT_DEFINITION_EXTENSION = 'http://hl7.org/fhir/StructureDefinition/valueset-concept-definition';

async function conceptEntries(tc: TermContext, provider: CodeSystemProvider, ids: number[], ctx: EntryContext): Promise<ValueSetExpansionContains[]> {
  const { req, declared } = ctx;
  const cs = provider.cs;
  const concepts = await provider.conceptsByIds(ids);
  const wantedDesignations = req.designations ?? [];
  const wantedProperties = req.properties ?? [];
  const withDesignations = req.includeDesignations || wantedDesignations.length > 0;
  const designations = await provider.designations(ids);
  const stored = new Map<number, StoredProperty[]>();
  for (const id of new Set(ids)) stored.set(id, await provider.properties(id));
  const defs = [...cs.propertyDefs, ...supplementsOf(tc, cs).flatMap((s) => s.propertyDefs)];
  return concepts.map((stored0) => {
    const vsConcept = ctx.listed.get(`${cs.url}\u0000${stored0.code}`);
    // A display the value set gives for the concept replaces the code system's.
    const c = vsConcept?.display ? { ...stored0, display: vsConcept.display } : stored0;
    const ds = [
      // Former designations are not listed, nor those a provider keeps for $lookup.
      ...(designations.get(c.id) ?? []).filter((d) => !d.retired && !d.secondary),
      ...(vsConcept?.designation ?? []).map((d) => {
        const extension = designationExtensions(d.extension);
        return { language: d.language, use: d.use, value: d.value, ...(extension ? { extension: JSON.parse(extension) as Designation['extension'] } : {}) };
      }),
    ];
    const entry: ValueSetExpansionContains = { system: cs.url, ...(ctx.withVersion.has(cs.url) && cs.version ? { version: cs.version } : {}), code: c.code };
    if (c.abstract) entry.abstract = true;
    if (c.inactive) entry.inactive = true;
    const choice = chooseDisplay(cs, c, ds, req.languages);
    if (choice.kind !== 'none') entry.display = choice.value;
    else if (req.languages.wildcard !== false && c.display) entry.display = c.display;
    if (withDesignations) {
      const shown = (choice.kind === 'none' && entry.display ? ds : designationsFor(cs, c, ds, choice)).filter((d) => designationWanted(d, wantedDesignations));
      if (shown.length > 0) entry.designation = shown.map((d) => ({ ...(d.extension ? { extension: d.extension } : {}), ...(d.language ? { language: d.language } : {}), ...(d.use ? { use: d.use } : {}), value: d.value }));
    }
    const extensions: NonNullable<ValueSetExpansionContains['extension']> = [];
    const props: Array<{ code: string; value: Record<string, unknown> }> = [];
    // An inactive concept says why: its status, else `inactive`; an `active` status says
    // nothing (docs/terminology.md#expand).
    const status = c.status && c.status.toLowerCase() !== 'active' ? c.status : c.inactive ? 'inactive' : undefined;
    if (status) props.push({ code: 'status', value: { valueCode: status } });
    // Standard extensions of the code system concept (and its supplements), overridden by the
    // value set's own (docs/terminology.md#concept-extensions).
    const fromVs = extensionRows(c.id, vsConcept?.extension as Array<{ url?: string }> | undefined);
    const extensionProps = [
      ...(stored.get(c.id) ?? []).filter((p) => isExtensionProperty(p.code, defs) && !fromVs.some((v) => v.code === p.code)),
      ...fromVs,
    ];
    for (const p of extensionProps) {
      if (p.code in EXTENSION_PROPERTY_URIS) {
        props.push({ code: p.code, value: propertyValue(p) });
        declared.set(p.code, EXTENSION_PROPERTY_URIS[p.code]);
      } else extensions.push({ url: p.code, valueString: p.value });
    }
    for (const e of vsConcept?.extension ?? []) {
      if (ECHOED_CONCEPT_EXTENSIONS.has(e.url) && !extensions.some((x) => x.url === e.url)) extensions.push(e);
      if (e.url === CONCEPT_DEFINITION_EXTENSION && req.includeDefinition) extensions.push(e);
    }
    for (const code of wantedProperties) {
      if (code === 'status' || props.some((p) => p.code === code)) continue;
      if (code === 'definition') {
        if (c.definition) props.push({ code, value: { valueString: c.definition } });
        declared.set(code, `${CONCEPT_PROPERTIES}#definition`);
        continue;
      }
      declared.set(code, defs.find((d) => d.code === code)?.uri);
      for (const p of (stored.get(c.id) ?? []).filter((x) => x.code === code)) props.push({ code, value: propertyValue(p) });
    }
    if (props.some((p) => p.code === 'status')) declared.set('status', `${CONCEPT_PROPERTIES}#status`);
    for (const p of props) extensions.push({ url: EXT_CONTAINS_PROPERTY, extension: [{ url: 'code', valueCode: p.code }, { url: 'value', ...p.value }] });
    if (extensions.length > 0) entry.extension = extensions;
    return entry;
  });
}

/** Whether a designation passes the `designation` parameters (none given: all do). */
function designationWanted(d: Designation, wanted: string[]): boolean {
  if (wanted.length === 0) return true;
  return wanted.some((w) => {
    const bar = w.lastIndexOf('|');
    const system = bar < 0 ? LANGUAGE_SYSTEM : w.slice(0, bar);
    const code = bar < 0 ? w : w.slice(bar + 1);
    if (system === LANGUAGE_SYSTEM) return d.language?.toLowerCase() === code.toLowerCase();
    return d.use?.code === code && (!system || d.use.system === system);
  });
}

/** A stored property value as the value[x] of an expansion property. */
function propertyValue(p: { type: string; value: string; system?: string; display?: string }): Record<string, unknown> {
  switch (p.type) {
    case 'Coding':
      return { valueCoding: { ...(p.system ? { system: p.system } : {}), code: p.value, ...(p.display ? { display: p.display } : {}) } };
    case 'integer':
      return { valueInteger: Number(p.value) };
    case 'decimal':
      return { valueDecimal: Number(p.value) };
    case 'boolean':
      return { valueBoolean: p.value === 'true' };
    case 'string':
      return { valueString: p.value };
    case 'dateTime':
      return { valueDateTime: p.value };
    default:
      return { valueCode: p.value };
  }
}

/**
 * For each of `ids`, its nearest ancestors that are themselves among `ids` (walking up the
 * direct parents, in id order): what nests an expansion's `contains` (docs/terminology.md#expand).
 */
async function ancestorsWithin(provider: CodeSystemProvider, ids: number[]): Promise<Map<number, number[]>> {
  const out = new Map<number, number[]>();
  if (ids.length === 0) return out;
  const wanted = new Set(ids);
  const parentsOf = new Map<number, number[]>();
  const parents = async (id: number) => {
    let p = parentsOf.get(id);
    if (!p) parentsOf.set(id, (p = (await provider.neighbours(id, true)).map((c) => c.id)));
    return p;
  };
  for (const id of wanted) {
    const seen = new Set<number>([id]);
    let level = await parents(id);
    while (level.length > 0) {
      const hits = level.filter((x) => wanted.has(x));
      if (hits.length > 0) {
        out.set(id, hits);
        break;
      }
      const next: number[] = [];
      for (const x of level) {
        for (const y of await parents(x)) {
          if (seen.has(y)) continue;
          seen.add(y);
          next.push(y);
        }
      }
      level = next;
    }
  }
  return out;
}
