import type { ValueSet } from '@medplum/fhirtypes';
import { flatten, includeCodeSystem, includeSystem, newerFirst, type MemberHit, type ValueSetEvaluator } from './compose.js';
import { providerFor } from '../providers/select.js';
import { checkDisplay, preferredDisplay, type LanguagePrefs } from './display.js';
import { codingText, msg } from '../messages.js';
import { codeSystemVersions, resolveCodeSystem, resolveSupplement, resolveValueSet } from './resolve.js';
import type { CodeSystemInfo, Concept, Designation, TermContext, TxIssue } from '../types.js';
import { checkViolation, versionMatches, type EffectiveVersion, NO_VERSION_RULES } from '../versions.js';

/**
 * Validates codings against a value set (or one code system), in batches: codings are grouped
 * by system and version, and each group costs a fixed number of queries (resolve, find
 * concepts, membership, designations) however many codes it holds. The result per coding is
 * what `$validate-code` reports for it: membership plus the tx-ecosystem issues.
 */

export interface CodingInput {
  system?: string;
  version?: string;
  code: string;
  display?: string;
}

export interface CodingCheck {
  input: CodingInput;
  /** FHIRPath prefix of the coding's elements: '' (code/system/display parameters), 'Coding.', 'CodeableConcept.coding[0].'. */
  prefix: string;
  /** FHIRPath of the coding as a whole. */
  whole: string;
  /** Coding parameter (vs. code+system parameters): decides the reference server's quoting of unknown systems. */
  isCoding: boolean;
}

export interface ValidationOptions {
  activeOnly: boolean;
  abstractAllowed: boolean;
  lenientDisplay: boolean;
  /** `valueset-membership-only`: report membership only (no code-system or display checks). */
  membershipOnly: boolean;
  languages: LanguagePrefs;
  /** Version for codings that carry none (`systemVersion` / `version` parameter). */
  systemVersion?: string;
}

export type ValidationTarget = { kind: 'valueSet'; evaluator: ValueSetEvaluator; vsText: string } | { kind: 'codeSystem'; cs: CodeSystemInfo };

export interface CodingOutcome {
  member: boolean;
  issues: TxIssue[];
  code: string;
  system?: string;
  version?: string;
  display?: string;
  inactive?: boolean;
  status?: string;
  normalizedCode?: string;
  unknownSystem?: string;
  causedByUnknownSystem?: string;
  /** The code system version the coding was evaluated at (for the status of the resources used). */
  cs?: CodeSystemInfo;
  /** Why the value set's filters left the code out (the start of `message`, in no issue: docs/terminology.md#ucum). */
  refusal?: string;
}

const ABSOLUTE = /^[A-Za-z][A-Za-z0-9+.-]*:/;

/** Validates every check (codings with a system; see validate.ts for codings without one). */
export async function validateCodings(
  tc: TermContext,
  target: ValidationTarget,
  checks: CodingCheck[],
  options: ValidationOptions,
): Promise<CodingOutcome[]> {
  const outcomes = new Array<CodingOutcome>(checks.length);
  const groups = new Map<string, number[]>();
  for (const [i, check] of checks.entries()) {
    const system = target.kind === 'codeSystem' ? (check.input.system ?? target.cs.url) : check.input.system;
    const key = `${system ?? ''}\u0000${check.input.version ?? ''}`;
    groups.set(key, [...(groups.get(key) ?? []), i]);
  }
  for (const indexes of groups.values()) {
    const first = checks[indexes[0]].input;
    const system = target.kind === 'codeSystem' ? (first.system ?? target.cs.url) : (first.system as string);
    const results = await validateGroup(tc, target, system, first.version, indexes.map((i) => checks[i]), options);
    indexes.forEach((i, j) => (outcomes[i] = results[j]));
  }
  return outcomes;
}

async function validateGroup(
  tc: TermContext,
  target: ValidationTarget,
  system: string,
  version: string | undefined,
  checks: CodingCheck[],
  o: ValidationOptions,
): Promise<CodingOutcome[]> {
  const vs = target.kind === 'valueSet' ? target : undefined;
  const notInVs = (c: CodingCheck): TxIssue => ({
    severity: 'error',
    code: 'code-invalid',
    type: 'not-in-vs',
    id: 'None_of_the_provided_codes_are_in_the_value_set_one',
    text: msg.notInValueSet(codingText(system, c.input.version, c.input.code, c.input.display), vs?.vsText ?? ''),
    expression: `${c.prefix}code`,
  });
  const at = (c: CodingCheck, element: string) => (c.prefix ? `${c.prefix}${element}` : element);

  if (!ABSOLUTE.test(system)) {
    return checks.map((c) => ({
      member: false,
      code: c.input.code,
      system,
      unknownSystem: system,
      issues: [
        { severity: 'error', code: 'invalid', type: 'invalid-data', id: 'Terminology_TX_System_Relative', text: msg.localSystem(), expression: at(c, 'system') },
        { severity: 'error', code: 'not-found', type: 'not-found', id: 'UNKNOWN_CODESYSTEM', text: msg.unknownSystem(system, true), expression: at(c, 'system') },
        ...(vs ? [notInVs(c)] : []),
      ],
    }));
  }

  const requested = version ?? o.systemVersion;
  const codes = checks.map((c) => c.input.code);
  let plans: VersionPlan[];
  let hits: Map<string, MemberHit> | undefined;
  if (target.kind === 'valueSet') {
    const vs = target;
    const latest = await resolveCodeSystem(tc, system);
    const requestedCs = requested !== undefined ? await resolveCodeSystem(tc, system, requested) : undefined;
    const includes = await vs.evaluator.includeVersions(system);
    if (!latest && !vs.evaluator.vs.compose && vs.evaluator.vs.expansion) {
      return fromExpansion(vs.evaluator.vs, system, checks, (rest) => unknownSystem(tc, target, system, requested, rest, notInVs, at));
    }
    if (!latest || (requested !== undefined && !requestedCs && includes.length === 0)) return unknownSystem(tc, target, system, requested, checks, notInVs, at);
    const displays = new Map(checks.filter((c) => c.input.display !== undefined).map((c) => [c.input.code, c.input.display as string]));
    hits = await vs.evaluator.members(system, requested, codes, { activeOnly: o.activeOnly, displays });
    const notAdmitted = nonMemberVersion(includes, requested);
    plans = [];
    for (const c of checks) {
      const hit = hits.get(c.input.code);
      plans.push(await versionPlan(tc, system, requested, requestedCs, hit?.version ?? notAdmitted, hit?.cs, latest, c, at));
    }
  } else {
    const rules = tc.versionRules ?? NO_VERSION_RULES;
    const wanted = rules.forces.get(system) ?? requested ?? rules.defaults.get(system);
    const cs = system === target.cs.url && !wanted ? target.cs : await resolveCodeSystem(tc, system, wanted);
    if (!cs) return unknownSystem(tc, target, system, wanted, checks, notInVs, at);
    plans = checks.map((c) => ({ cs, issues: versionCheckIssues(tc, system, cs, c, at), includeUnresolved: false }));
  }

  // Codes of one group may be evaluated at different versions (one value set including two).
  const concepts = new Map<string, Concept>();
  /** Why an unknown code is not one, when its provider says (a grammar's parse error). */
  const reasons = new Map<string, string>();
  /** Notes about valid codes (CodeSystem/$validate-code only), and how messages name each version. */
  const notes = new Map<string, string>();
  const versionLabels = new Map<number, string | undefined>();
  const designations = new Map<number, Map<number, Designation[]>>();
  const needDesignations = checks.some((c) => c.input.display !== undefined) || o.languages.tags.length > 0;
  for (const [cs, group] of groupByCodeSystem(plans, checks)) {
    const provider = providerFor(tc, cs);
    const found = await provider.findConcepts(group);
    for (const [code, concept] of found) concepts.set(`${cs.key} ${code}`, concept);
    versionLabels.set(cs.key, provider.versionLabel?.());
    if (provider.validNote && target.kind !== 'valueSet') {
      for (const code of group.filter((c) => found.has(c))) {
        const note = await provider.validNote(code);
        if (note) notes.set(`${cs.key} ${code}`, note);
      }
    }
    if (provider.unknownReason) {
      for (const code of group.filter((c) => !found.has(c))) {
        const reason = await provider.unknownReason(code);
        if (reason) reasons.set(`${cs.key} ${code}`, reason);
      }
    }
    if (needDesignations) designations.set(cs.key, await provider.designations([...new Set([...found.values()].map((c) => c.id))]));
  }
  const conceptOf = (i: number) => concepts.get(`${plans[i].cs.key} ${checks[i].input.code}`);

  let members: Set<string>;
  let membersIgnoringActivity = new Set<string>();
  if (vs && hits) {
    members = new Set(hits.keys());
    const inactiveOut = checks.filter((c, i) => !members.has(c.input.code) && conceptOf(i)?.inactive).map((c) => c.input.code);
    if (inactiveOut.length > 0) membersIgnoringActivity = new Set((await vs.evaluator.members(system, requested, inactiveOut, { anyActivity: true })).keys());
  } else {
    members = new Set(checks.filter((c, i) => conceptOf(i) && !(o.activeOnly && conceptOf(i)?.inactive)).map((c) => c.input.code));
    membersIgnoringActivity = new Set(checks.filter((c, i) => conceptOf(i)).map((c) => c.input.code));
  }

  return checks.map((c, i) => {
    const { cs, issues, causedBy, includeUnresolved } = plans[i];
    const concept = conceptOf(i);
    const out: CodingOutcome = { member: members.has(c.input.code), issues: [...issues], code: c.input.code, system, version: cs.version, cs };
    if (causedBy) out.causedByUnknownSystem = causedBy;
    // An include whose version is unknown cannot be evaluated: that is the finding, not "not in the value set".
    const reportNotInVs = () => {
      if (vs && !out.member && !includeUnresolved) {
        out.issues.push(notInVs(c));
        const refusal = vs.evaluator.refusals.get(c.input.code);
        if (refusal) out.refusal = refusal;
      }
    };
    if (!concept) {
      if (!o.membershipOnly) {
        const fragment = cs.content === 'fragment' || cs.content === 'example';
        out.issues.push({
          severity: fragment ? 'warning' : 'error',
          code: 'code-invalid',
          type: 'invalid-code',
          id: fragment ? 'UNKNOWN_CODE_IN_FRAGMENT' : cs.version ? 'Unknown_Code_in_Version' : 'Unknown_Code_in',
          text: fragment ? msg.unknownCodeInFragment(c.input.code, cs.url, cs.version) : msg.unknownCode(c.input.code, cs.url, cs.version, versionLabels.get(cs.key)),
          expression: at(c, 'code'),
          // A warning that does not make the code invalid: not part of `message`.
          ...(fragment ? { inMessage: false } : {}),
        });
        const reason = reasons.get(`${cs.key} ${c.input.code}`);
        if (reason) out.issues.push({ severity: 'information', code: 'code-invalid', type: 'invalid-code', text: reason, expression: at(c, 'code') });
        // A fragment does not list every code: an unknown one stays valid where the whole
        // system is admitted (docs/terminology.md#valueset-validate-code).
        out.member = fragment && (!vs || admitsWholeSystem(vs.evaluator.vs, system));
      }
      reportNotInVs();
      return out;
    }
    const ds = designations.get(cs.key)?.get(concept.id) ?? [];
    out.display = preferredDisplay(cs, concept, ds, o.languages);
    // A member a filter admits is a member whatever its status (docs/terminology.md#valueset-validate-code).
    const statusReported = !(out.member && hits?.get(c.input.code)?.byFilter);
    if (!o.membershipOnly) conceptIssues(c, cs, concept, ds, out, o, at, membersIgnoringActivity.has(c.input.code), statusReported);
    const note = notes.get(`${cs.key} ${c.input.code}`);
    if (note && !o.membershipOnly) out.issues.push({ severity: 'information', code: 'informational', type: 'process-note', text: note, expression: at(c, 'code') });
    const listedStatus = vs && out.member ? includeConceptStatus(vs.evaluator.vs, system, concept.code) : undefined;
    if (listedStatus) {
      out.issues.push({
        severity: 'warning',
        code: 'business-rule',
        type: 'code-comment',
        id: 'CONCEPT_DEPRECATED_IN_VALUESET',
        text: msg.deprecatedInValueSet(concept.code, system, vs?.vsText ?? '', listedStatus),
        expression: c.whole,
      });
    }
    reportNotInVs();
    return out;
  });
}

/**
 * The include version a code no include admits is reported at: the include naming the coding's
 * version; else, when the includes name several versions, the newest of them
 * (docs/terminology.md#overloaded-versions); else the last include of the system (every include
 * was looked in, in order, and the last one is where the search ended).
 */
function nonMemberVersion(includes: EffectiveVersion[], requested: string | undefined): EffectiveVersion | undefined {
  const same = requested !== undefined ? includes.find((e) => e.declared === requested) : undefined;
  if (same) return same;
  const declared = includes.filter((e) => e.declared !== undefined && e.source === 'include');
  if (declared.length > 1) return [...declared].sort((a, b) => newerFirst(a.declared as string, b.declared as string))[0];
  return includes[includes.length - 1];
}

/** The code system version a coding is evaluated at, and the version findings about it. */
interface VersionPlan {
  cs: CodeSystemInfo;
  issues: TxIssue[];
  /** `x-caused-by-unknown-system`: a version asked for (by the coding or the include) that is not known. */
  causedBy?: string;
  /** The include's own version is unknown, so the include could not be evaluated. */
  includeUnresolved: boolean;
}

/**
 * The version rules of docs/terminology.md#version-parameters for one coding against the include
 * that admits it (or, for a code no include admits, the last include of its system): the include's effective version wins over
 * the coding's, and a difference is an error; a versionless include takes the coding's version
 * when it exists (else the newest, with a warning); the version used must pass
 * `check-system-version`.
 */
async function versionPlan(
  tc: TermContext,
  system: string,
  requested: string | undefined,
  requestedCs: CodeSystemInfo | undefined,
  effective: EffectiveVersion | undefined,
  memberCs: CodeSystemInfo | undefined,
  latest: CodeSystemInfo,
  c: CodingCheck,
  at: (c: CodingCheck, element: string) => string,
): Promise<VersionPlan> {
  const issues: TxIssue[] = [];
  let causedBy: string | undefined;
  const unknownVersion = async (v: string) => {
    issues.push({ severity: 'error', code: 'not-found', type: 'not-found', id: 'UNKNOWN_CODESYSTEM_VERSION', text: msg.unknownSystemVersion(system, v, await codeSystemVersions(tc, system)), expression: at(c, 'system') });
    causedBy ??= `${system}|${v}`;
  };
  if (requested !== undefined && !requestedCs) await unknownVersion(requested);
  let cs: CodeSystemInfo;
  let includeUnresolved = false;
  if (effective?.version !== undefined) {
    const effectiveCs = memberCs ?? (await includeCodeSystem(tc, system, effective, requested));
    if (!effectiveCs) await unknownVersion(effective.version);
    if (requested !== undefined && !versionMatches(requested, effective.version)) {
      const changed = effective.source !== 'include';
      issues.push({
        severity: 'error',
        code: 'invalid',
        type: 'vs-invalid',
        id: changed ? 'VALUESET_VALUE_MISMATCH_CHANGED' : 'VALUESET_VALUE_MISMATCH',
        text: changed
          ? msg.versionMismatchChanged(system, effective.version, effective.declared ?? '', requested)
          : msg.versionMismatch(system, effective.version, requested),
        expression: at(c, 'version'),
      });
    }
    const rules = tc.versionRules ?? NO_VERSION_RULES;
    const fallback = rules.defaults.get(system) ?? rules.checks.get(system);
    cs = effectiveCs ?? requestedCs ?? (fallback !== undefined ? await resolveCodeSystem(tc, system, fallback) : undefined) ?? latest;
    includeUnresolved = !effectiveCs;
  } else {
    cs = memberCs ?? requestedCs ?? latest;
    if (requested !== undefined && !requestedCs && effective) {
      issues.push({
        severity: 'warning',
        code: 'invalid',
        type: 'vs-invalid',
        id: 'VALUESET_VALUE_MISMATCH_DEFAULT',
        text: msg.versionMismatchVersionless(system, cs.version ?? '', requested),
        expression: at(c, 'version'),
        inMessage: false,
      });
    }
  }
  issues.push(...versionCheckIssues(tc, system, cs, c, at));
  return { cs, issues, causedBy, includeUnresolved };
}

/** `check-system-version`: the version used must match the pattern. */
function versionCheckIssues(tc: TermContext, system: string, cs: CodeSystemInfo, c: CodingCheck, at: (c: CodingCheck, element: string) => string): TxIssue[] {
  const pattern = checkViolation(tc.versionRules ?? NO_VERSION_RULES, system, cs.version);
  if (pattern === undefined) return [];
  return [{ severity: 'error', code: 'exception', type: 'version-error', id: 'VALUESET_VERSION_CHECK', text: msg.versionNotAllowed(cs.version ?? '', system, pattern), expression: at(c, 'version') }];
}

function groupByCodeSystem(plans: VersionPlan[], checks: CodingCheck[]): Map<CodeSystemInfo, string[]> {
  const byKey = new Map<number, [CodeSystemInfo, string[]]>();
  plans.forEach((p, i) => {
    const entry = byKey.get(p.cs.key) ?? [p.cs, []];
    entry[1].push(checks[i].input.code);
    byKey.set(p.cs.key, entry);
  });
  return new Map([...byKey.values()]);
}

/** Issues about a known concept: case, inactive, abstract, display. */
function conceptIssues(
  c: CodingCheck,
  cs: CodeSystemInfo,
  concept: Concept,
  ds: Designation[],
  out: CodingOutcome,
  o: ValidationOptions,
  at: (c: CodingCheck, element: string) => string,
  memberIfActive: boolean,
  statusReported: boolean,
): void {
  if (concept.code !== c.input.code) {
    out.normalizedCode = concept.code;
    out.issues.push({
      severity: 'information',
      code: 'business-rule',
      type: 'code-rule',
      id: 'CODE_CASE_DIFFERENCE',
      text: msg.caseDiffers(c.input.code, concept.code, cs.version ? `${cs.url}|${cs.version}` : cs.url),
      expression: at(c, 'code'),
    });
  }
  if (concept.inactive && statusReported) {
    out.inactive = true;
    // `inactive` itself is what the flag says already: only another status is reported.
    if (concept.status && concept.status !== 'inactive') out.status = concept.status;
    // A discouraged concept is inactive but not retired: its status alone is named (docs/terminology.md#loinc).
    const status = !concept.status || concept.status === 'inactive' ? 'inactive' : concept.status.toLowerCase() === 'discouraged' ? concept.status : `${concept.status} and inactive`;
    out.issues.push({ severity: 'warning', code: 'business-rule', type: 'code-comment', id: 'INACTIVE_CONCEPT_FOUND', text: msg.inactiveConcept(c.input.code, status), expression: c.whole });
    // Left out for its activity alone (`activeOnly`, or the value set's `compose.inactive = false`).
    if (!out.member && memberIfActive) {
      out.issues.push({ severity: 'error', code: 'business-rule', type: 'code-rule', id: 'STATUS_CODE_WARNING_CODE', text: msg.notActive(c.input.code), expression: at(c, 'code') });
    }
  } else if (concept.status === 'deprecated' || concept.status === 'withdrawn') {
    // Still active, but its use should be reviewed (docs/terminology.md#valueset-validate-code).
    out.status = concept.status;
    const deprecated = concept.status === 'deprecated';
    out.issues.push({
      severity: 'warning',
      code: 'business-rule',
      type: 'code-comment',
      id: deprecated ? 'DEPRECATED_CONCEPT_FOUND' : 'INACTIVE_CONCEPT_FOUND',
      text: deprecated ? msg.deprecatedConcept(c.input.code) : msg.inactiveConcept(c.input.code, concept.status),
      expression: c.whole,
    });
  }
  if (!o.abstractAllowed && concept.abstract && out.member) {
    out.member = false;
    out.issues.push({
      severity: 'error',
      code: 'business-rule',
      type: 'code-rule',
      id: 'ABSTRACT_CODE_NOT_ALLOWED',
      text: msg.abstractNotAllowed(codingText(out.system, undefined, c.input.code)),
      expression: at(c, 'code'),
    });
  }
  if (c.input.display !== undefined) {
    out.issues.push(...checkDisplay(c.input.display, out.system as string, cs, concept, ds, o.languages, at(c, 'display'), o.lenientDisplay));
  }
}

/** Outcomes for codings whose code system is not known (or is a value set). */
/**
 * A pre-expanded value set (no `compose`) of a code system the server does not know: a code its
 * `expansion` lists is valid as listed (docs/terminology.md#value-set-membership); the others are
 * judged as codes of an unknown system.
 */
async function fromExpansion(
  vs: ValueSet,
  system: string,
  checks: CodingCheck[],
  others: (rest: CodingCheck[]) => Promise<CodingOutcome[]>,
): Promise<CodingOutcome[]> {
  const listed = flatten(vs.expansion?.contains);
  const entryOf = (c: CodingCheck) =>
    listed.find((e) => e.system === system && e.code === c.input.code && (!c.input.version || !e.version || e.version === c.input.version));
  const rest = checks.filter((c) => !entryOf(c));
  const judged = rest.length > 0 ? await others(rest) : [];
  return checks.map((c) => {
    const entry = entryOf(c);
    if (!entry) return judged[rest.indexOf(c)];
    return { member: true, issues: [], code: c.input.code, system, version: entry.version, display: entry.display, inactive: entry.inactive || undefined };
  });
}

async function unknownSystem(
  tc: TermContext,
  target: ValidationTarget,
  system: string,
  version: string | undefined,
  checks: CodingCheck[],
  notInVs: (c: CodingCheck) => TxIssue,
  at: (c: CodingCheck, element: string) => string,
): Promise<CodingOutcome[]> {
  const vs = target.kind === 'valueSet' ? target : undefined;
  // `system` names something that is not a code system: every coding is refused for it.
  const notACodeSystem = (id: string, text: string): CodingOutcome[] =>
    checks.map((c) => ({
      member: false,
      code: c.input.code,
      system,
      issues: [{ severity: 'error', code: 'invalid', type: 'invalid-data', id, text, expression: at(c, 'system') }, ...(vs ? [notInVs(c)] : [])],
    }));
  if (await resolveValueSet(tc, system)) return notACodeSystem('Terminology_TX_System_ValueSet2', msg.systemIsValueSet(system));
  // A supplement is not a code system (docs/terminology.md#supplements-are-not-code-systems);
  // a value set that includes one draws on an unknown code system instead.
  const included = vs ? (await vs.evaluator.includedSystems()).includes(system) : false;
  const supplement = included ? undefined : await resolveSupplement(tc, system, version);
  if (supplement) {
    const canonical = supplement.version ? `${supplement.url}|${supplement.version}` : supplement.url;
    return notACodeSystem('CODESYSTEM_CS_NO_SUPPLEMENT', msg.systemIsSupplement(canonical));
  }
  const known = version ? await codeSystemVersions(tc, system) : [];
  if (version && known.length > 0) {
    return checks.map((c) => ({
      member: false,
      code: c.input.code,
      system,
      unknownSystem: `${system}|${version}`,
      issues: [
        { severity: 'error', code: 'not-found', type: 'not-found', id: 'UNKNOWN_CODESYSTEM_VERSION', text: msg.unknownSystemVersion(system, version, known), expression: at(c, 'system') },
        ...(vs ? [notInVs(c)] : []),
      ],
    }));
  }
  // The reference server quotes the URL except when the code system is neither one the value
  // set draws on nor asked for by code/system parameters of a value set with known systems.
  const vsHasUnknown = vs ? await hasUnknownSystem(tc, await vs.evaluator.includedSystems()) : false;
  return checks.map((c) => {
    const quoted = included || (!c.isCoding && !vsHasUnknown);
    const issues: TxIssue[] = [
      version !== undefined
        ? { severity: 'error', code: 'not-found', type: 'not-found', id: 'UNKNOWN_CODESYSTEM_VERSION_NONE', text: msg.unknownSystemVersion(system, version, []), expression: at(c, 'system') }
        : { severity: 'error', code: 'not-found', type: 'not-found', id: 'UNKNOWN_CODESYSTEM', text: msg.unknownSystem(system, quoted), expression: at(c, 'system') },
    ];
    if (vs && !included) issues.unshift(notInVs(c));
    const out: CodingOutcome = { member: false, code: c.input.code, system, issues };
    if (included) out.causedByUnknownSystem = system;
    else out.unknownSystem = system;
    return out;
  });
}

async function hasUnknownSystem(tc: TermContext, systems: string[]): Promise<boolean> {
  for (const s of systems) if (!(await resolveCodeSystem(tc, s))) return true;
  return false;
}

/** Whether a value set includes every code of `system` (an include without concepts or filters, and nothing excluded from it). */
function admitsWholeSystem(vs: ValueSet, system: string): boolean {
  const compose = vs.compose;
  if (!compose) return false;
  const whole = (compose.include ?? []).some((inc) => includeSystem(inc).system === system && !inc.concept && !inc.filter && !inc.valueSet);
  const excluded = (compose.exclude ?? []).some((exc) => !exc.system || includeSystem(exc).system === system);
  return whole && !excluded;
}

const STANDARDS_STATUS_EXTENSION = 'http://hl7.org/fhir/StructureDefinition/structuredefinition-standards-status';
const VALUESET_DEPRECATED_EXTENSION = 'http://hl7.org/fhir/StructureDefinition/valueset-deprecated';

/**
 * The status the value set gives its listing of a concept (`include.concept` with a
 * standards-status of `deprecated`/`withdrawn`, or `valueset-deprecated` true): the concept's
 * inclusion in the value set is deprecated, whatever its status in the code system.
 */
function includeConceptStatus(vs: ValueSet, system: string, code: string): string | undefined {
  for (const inc of vs.compose?.include ?? []) {
    if (includeSystem(inc).system !== system) continue;
    for (const listed of inc.concept ?? []) {
      if (listed.code !== code) continue;
      const status = listed.extension?.find((e) => e.url === STANDARDS_STATUS_EXTENSION)?.valueCode;
      if (status === 'deprecated' || status === 'withdrawn') return status;
      if (listed.extension?.some((e) => e.url === VALUESET_DEPRECATED_EXTENSION && e.valueBoolean === true)) return 'deprecated';
    }
  }
  return undefined;
}
