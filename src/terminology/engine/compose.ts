import type { ValueSet, ValueSetComposeInclude, ValueSetExpansionContains } from '@medplum/fhirtypes';
import { FhirError } from '../../fhir/outcome.js';
import { toOutcomeIssue } from '../issues.js';
import { providerFor } from '../providers/select.js';
import { checkComposeFilters, checkValueSetGraph, terminologyLimits, type TerminologyLimits } from '../limits.js';
import { msg, valueSetText } from '../messages.js';
import { resolveCodeSystem, resolveValueSet } from './resolve.js';
import { StatusReport, valueSetPublication } from './status.js';
import type { CodeSystemInfo, TermContext } from '../types.js';
import { compareSemver, defaultValueSetVersion, effectiveVersion, splitCanonical, versionMatches, type EffectiveVersion, NO_VERSION_RULES } from '../versions.js';

/**
 * Value-set membership (docs/terminology.md#value-set-membership), decided for the given codes —
 * never by expanding first. Each include asks the code system's provider which of the candidate
 * concepts it selects (explicit concepts, filters ANDed, the whole system); nested value sets
 * (`include.valueSet`) are intersected for the same candidates, each evaluated once per request
 * (Evaluation); excludes are subtracted; `compose.inactive = false` (or `activeOnly`) drops
 * inactive concepts. A value set without `compose` is decided from its `expansion`. Any number
 * of codes costs a fixed number of provider calls (10k-coding requests).
 */

/**
 * An `include.valueSet` that cannot be found (validate-code reports it as an issue); `url` is the
 * canonical looked for (`url|version` when the reference or a `default-valueset-version` pinned one).
 */
export class UnknownValueSetError extends Error {
  constructor(readonly url: string) {
    super(`value set ${url} not found`);
  }
}

/** Why a code is a member: the code system version of the include that admits it. */
export interface MemberHit {
  /** undefined: the include names a code system (version) the server does not have, or a pre-expanded value set. */
  cs: CodeSystemInfo | undefined;
  version: EffectiveVersion;
  /** Admitted by an include's filters of a system whose provider says so: its status is not reported (docs/terminology.md#valueset-validate-code). */
  byFilter?: boolean;
}

/**
 * The code system version an include is evaluated at: its effective version — the coding's
 * version when the effective one is a pattern it matches, else the newest match; without one,
 * the coding's version when it exists, else the newest.
 */
export async function includeCodeSystem(
  tc: TermContext,
  system: string,
  effective: EffectiveVersion,
  codingVersion: string | undefined,
): Promise<CodeSystemInfo | undefined> {
  if (effective.version !== undefined) {
    const coding = codingVersion !== undefined && versionMatches(codingVersion, effective.version) ? await resolveCodeSystem(tc, system, codingVersion) : undefined;
    return coding ?? resolveCodeSystem(tc, system, effective.version);
  }
  return (codingVersion !== undefined ? await resolveCodeSystem(tc, system, codingVersion) : undefined) ?? resolveCodeSystem(tc, system);
}

export interface MemberOptions {
  /** Only active concepts are members (`activeOnly`, or `compose.inactive = false`). */
  activeOnly?: boolean;
  /**
   * The display each code is given with (code → display): among the versions the includes name,
   * the one whose concept has that display is chosen (docs/terminology.md#overloaded-versions).
   */
  displays?: Map<string, string>;
  /**
   * Ignore the value set's own `compose.inactive = false` (validate-code asks whether a code
   * left out is a member but for its activity).
   */
  anyActivity?: boolean;
}

/**
 * What one evaluation shares across its value-set graph (docs/terminology.md#limits): each value
 * set's answers are memoised by its identity, so a graph in which value sets include each other
 * in a diamond costs its number of value sets, not its number of include paths; and the value
 * sets and includes it touches are counted against the request's bounds.
 */
export class Evaluation {
  /** Memoised answers: value-set identity → purpose → answer. */
  private readonly answers = new Map<string, Map<string, Promise<unknown>>>();
  private valueSets = 0;
  private includes = 0;
  private purposes = 0;
  /** The status of the value sets the evaluation imported (docs/terminology.md#status-of-the-resources-used). */
  readonly statuses = new StatusReport();

  constructor(
    private readonly limits: TerminologyLimits,
    /** The root value set, named in the too-costly message. */
    private readonly rootText: string,
  ) {}

  /** Counts a value set the first time the graph reaches it; past a bound: 400 `too-costly`. */
  visit(identity: string, vs: ValueSet): void {
    if (this.answers.has(identity)) return;
    this.answers.set(identity, new Map<string, Promise<unknown>>());
    this.valueSets++;
    this.includes += (vs.compose?.include?.length ?? 0) + (vs.compose?.exclude?.length ?? 0);
    checkValueSetGraph(this.valueSets, this.includes, this.limits, this.rootText);
  }

  /** A purpose no earlier call used (answers that depend on a call's arguments). */
  nextPurpose(name: string): string {
    return `${name} ${++this.purposes}`;
  }

  /** The answer of `identity` for `purpose`, computed once (concurrent askers share it). */
  once<T>(identity: string, purpose: string, compute: () => Promise<T>): Promise<T> {
    let byPurpose = this.answers.get(identity);
    if (!byPurpose) this.answers.set(identity, (byPurpose = new Map<string, Promise<unknown>>()));
    let answer = byPurpose.get(purpose) as Promise<T> | undefined;
    if (!answer) byPurpose.set(purpose, (answer = compute()));
    return answer;
  }
}

/** The codes one `members` call asks about: nested value sets are evaluated for all of them, once. */
interface MemberScope {
  codes: string[];
  purpose: string;
}

export class ValueSetEvaluator {
  /** Identity of the value set within the evaluation (`url|version`, or the root's identity + `#id`). */
  readonly identity: string;
  readonly evaluation: Evaluation;
  /**
   * Why this value set's includes left out a code of their system, when a provider said (code →
   * reason; docs/terminology.md#ucum): `$validate-code` puts it before the not-in-value-set text.
   */
  readonly refusals = new Map<string, string>();
  /** Identity of the value set whose `contained` resolves `#id` references. */
  private readonly rootIdentity: string;

  constructor(
    private readonly tc: TermContext,
    readonly vs: ValueSet,
    /** Canonicals (or contained ids) on the path from the root, for cycle detection. */
    private readonly chain: string[] = [],
    /** The value set whose `contained` resolves `#id` references. */
    private readonly root: ValueSet = vs,
    /** The value sets (`url|version`) from the root to this one's parent, for the cycle message. */
    private readonly pathway: string[] = [],
    shared?: { evaluation: Evaluation; identity: string; rootIdentity: string },
  ) {
    checkComposeFilters(vs, terminologyLimits(tc.env));
    this.identity = shared?.identity ?? (vs.url ? `${vs.url}|${vs.version ?? ''}` : '#root');
    this.rootIdentity = shared?.rootIdentity ?? this.identity;
    this.evaluation = shared?.evaluation ?? new Evaluation(terminologyLimits(tc.env), valueSetText(vs));
    this.evaluation.visit(this.identity, vs);
  }

  /** Systems the value set draws codes from (directly or through nested value sets), in order. */
  includedSystems(): Promise<string[]> {
    return this.evaluation.once(this.identity, 'systems', async () => {
      const out = new Set<string>();
      for (const inc of this.vs.compose?.include ?? []) {
        const { system } = includeSystem(inc);
        if (system) out.add(system);
        else for (const ref of inc.valueSet ?? []) for (const s of await (await this.nested(ref)).includedSystems()) out.add(s);
      }
      if (!this.vs.compose) for (const c of flatten(this.vs.expansion?.contains)) if (c.system) out.add(c.system);
      return [...out];
    });
  }

  /**
   * The versions the includes of `system` are evaluated at (docs/terminology.md#version-parameters),
   * in document order, nested value sets included; each distinct version once.
   */
  includeVersions(system: string): Promise<EffectiveVersion[]> {
    return this.evaluation.once(this.identity, `versions ${system}`, async () => {
      const out = new Map<string, EffectiveVersion>();
      const add = (v: EffectiveVersion) => {
        const key = JSON.stringify([v.version, v.source, v.declared]);
        if (!out.has(key)) out.set(key, v);
      };
      for (const inc of this.vs.compose?.include ?? []) {
        const pinned = includeSystem(inc);
        if (pinned.system === system) add(effectiveVersion(this.tc.versionRules ?? NO_VERSION_RULES, system, pinned.version));
        else if (!pinned.system) for (const ref of inc.valueSet ?? []) for (const v of await (await this.nested(ref)).includeVersions(system)) add(v);
      }
      return [...out.values()];
    });
  }

  /**
   * Which of `codes` (of `system`) are members, each with the code system version of the include
   * that admits it. `version` is the coding's own version: a versionless include (no version
   * rule either) is evaluated at it when it exists, else at the newest version; an include with a
   * version is evaluated at that version whatever the coding says (validate-code reports the
   * difference).
   */
  async members(system: string, version: string | undefined, codes: string[], options: MemberOptions = {}): Promise<Map<string, MemberHit>> {
    await this.checkCycles();
    const scope: MemberScope = { codes, purpose: this.evaluation.nextPurpose('members') };
    return this.membersIn(scope, system, version, codes, options.activeOnly === true, options.displays, options.anyActivity === true);
  }

  /**
   * Refuses a value set that reaches itself through the value sets its includes and excludes
   * import, before any code is looked for (docs/terminology.md#value-set-membership): a code an
   * earlier include admits would otherwise leave the cycle unvisited and answer as if the value
   * set were sound. Each value set of the graph is walked once; one that cannot be found is
   * left to the membership answer, which reports it.
   */
  private checkCycles(): Promise<void> {
    return this.evaluation.once(this.identity, 'cycles', async () => {
      for (const part of [...(this.vs.compose?.include ?? []), ...(this.vs.compose?.exclude ?? [])]) {
        for (const ref of part.valueSet ?? []) {
          let nested: ValueSetEvaluator;
          try {
            nested = await this.nested(ref);
          } catch (err) {
            if (err instanceof UnknownValueSetError) continue;
            throw err;
          }
          await nested.checkCycles();
        }
      }
    });
  }

  private async membersIn(
    scope: MemberScope,
    system: string,
    version: string | undefined,
    codes: string[],
    activeOnlyAsked: boolean,
    displays?: Map<string, string>,
    anyActivity = false,
  ): Promise<Map<string, MemberHit>> {
    const result = new Map<string, MemberHit>();
    if (codes.length === 0) return result;
    const compose = this.vs.compose;
    if (!compose) return this.expansionMembers(system, version, codes);
    const activeOnly = activeOnlyAsked || (compose.inactive === false && !anyActivity);
    // Several versions of the system named by the includes (docs/terminology.md#overloaded-versions):
    // newest first; a coding's version that one of them names selects those includes only; a
    // coding without one is looked for at the version chosen for its code.
    const includes = newestIncludesFirst(compose.include ?? [], system);
    const declared = new Set(includes.map(([inc]) => includeSystem(inc)).filter((p) => p.system === system && p.version !== undefined).map((p) => p.version as string));
    const onlyVersion = version !== undefined && declared.has(version) ? version : undefined;
    const chosen = version === undefined && declared.size > 1 && !(this.tc.versionRules ?? NO_VERSION_RULES).forces.has(system) ? await this.chooseVersions(system, [...declared], codes, displays) : undefined;
    for (const [inc, i] of includes) {
      let remaining = codes.filter((c) => !result.has(c));
      if (remaining.length === 0) break;
      const pinned = includeSystem(inc);
      if (pinned.system === system) {
        if (onlyVersion !== undefined && pinned.version !== onlyVersion) continue;
        if (chosen) remaining = remaining.filter((c) => !chosen.has(c) || chosen.get(c) === pinned.version);
      }
      for (const [c, hit] of await this.includeMembers(scope, inc, `ValueSet.compose.include[${i}]`, system, version, remaining, activeOnly)) result.set(c, hit);
    }
    for (const [i, exc] of (compose.exclude ?? []).entries()) {
      if (result.size === 0) break;
      for (const c of (await this.includeMembers(scope, exc, `ValueSet.compose.exclude[${i}]`, system, version, [...result.keys()], false)).keys()) result.delete(c);
    }
    return result;
  }

  /**
   * For each code, the one version (of the several the includes name) it is looked for at: the
   * newest of those that have the code (with the given display, when one is given: the concept's
   * display or one of its designations); none when every version has it (the includes are then
   * tried newest first); the newest of all when none has it.
   */
  private async chooseVersions(system: string, versions: string[], codes: string[], displays?: Map<string, string>): Promise<Map<string, string>> {
    const ordered = [...versions].sort(newerFirst);
    const foundIn = new Map<string, string[]>();
    for (const v of ordered) {
      const cs = await resolveCodeSystem(this.tc, system, v);
      if (!cs) continue;
      const provider = providerFor(this.tc, cs);
      const concepts = await provider.findConcepts(codes);
      const withDisplay = [...concepts.values()].filter((c) => displays?.has(c.code));
      const designations = withDisplay.length > 0 ? await provider.designations(withDisplay.map((c) => c.id)) : undefined;
      for (const code of codes) {
        const concept = concepts.get(code);
        if (!concept) continue;
        const display = displays?.get(code);
        if (display !== undefined && concept.display !== display && !(designations?.get(concept.id) ?? []).some((d) => d.value === display)) continue;
        foundIn.set(code, [...(foundIn.get(code) ?? []), v]);
      }
    }
    const out = new Map<string, string>();
    for (const code of codes) {
      const found = foundIn.get(code) ?? [];
      if (found.length === ordered.length) continue;
      out.set(code, found[0] ?? ordered[0]);
    }
    return out;
  }

  /**
   * The members of this (nested) value set among all the codes of the scope, computed once per
   * value set, system, version and activity: the callers on every path intersect it with their
   * own candidates, which are a subset of the scope's codes.
   */
  private scopeMembers(scope: MemberScope, system: string, version: string | undefined, activeOnly: boolean): Promise<Map<string, MemberHit>> {
    return this.evaluation.once(this.identity, `${scope.purpose} ${system}|${version ?? ''} ${activeOnly}`, () => this.membersIn(scope, system, version, scope.codes, activeOnly));
  }

  private async includeMembers(
    scope: MemberScope,
    inc: ValueSetComposeInclude,
    path: string,
    system: string,
    version: string | undefined,
    codes: string[],
    activeOnly: boolean,
  ): Promise<Map<string, MemberHit>> {
    const pinned = includeSystem(inc);
    if (pinned.system !== undefined && pinned.system !== system) return new Map();
    let candidates = codes;
    const nestedHits = new Map<string, MemberHit>();
    for (const ref of inc.valueSet ?? []) {
      const members = await (await this.nested(ref)).scopeMembers(scope, system, version, activeOnly);
      candidates = candidates.filter((c) => members.has(c));
      // An imported value set's member is reported as a code of the system (its status too).
      for (const c of candidates) nestedHits.set(c, { cs: (members.get(c) as MemberHit).cs, version: (members.get(c) as MemberHit).version });
      if (candidates.length === 0) return new Map();
    }
    if (!pinned.system) return nestedHits;

    const effective = effectiveVersion(this.tc.versionRules ?? NO_VERSION_RULES, pinned.system, pinned.version);
    const cs = await includeCodeSystem(this.tc, pinned.system, effective, version);
    const provider = cs ? providerFor(this.tc, cs) : undefined;
    const byFilter = (inc.filter?.length ?? 0) > 0 && !inc.concept && provider?.filterMembersWithoutStatus === true;
    const hits = (found: Iterable<string>) => new Map([...found].map((c) => [c, byFilter ? { cs, version: effective, byFilter } : { cs, version: effective }] as const));
    if (!cs || !provider) {
      // Unknown system: only an explicit list can say anything (the caller reports the system).
      const listed = new Set((inc.concept ?? []).map((c) => c.code));
      return hits(inc.concept ? candidates.filter((c) => listed.has(c)) : []);
    }
    const concepts = await provider.findConcepts(candidates);
    const ids = await provider.selected({ include: inc, path, activeOnly }, [...concepts.values()].map((c) => c.id));
    const out = new Set<string>();
    for (const code of candidates) {
      const concept = concepts.get(code);
      if (concept && ids.has(concept.id)) out.add(code);
      else if (concept && provider.refusal && path.includes('.include[') && !this.refusals.has(code)) {
        const reason = await provider.refusal({ include: inc, path, activeOnly }, concept);
        if (reason) this.refusals.set(code, reason);
      }
    }
    // A code system the server does not hold completely: a listed code may be valid elsewhere.
    if (inc.concept && (cs.content === 'fragment' || cs.content === 'example')) {
      const listed = new Set(inc.concept.map((c) => c.code));
      for (const code of candidates) if (!concepts.has(code) && listed.has(code)) out.add(code);
    }
    return hits(out);
  }

  private expansionMembers(system: string, version: string | undefined, codes: string[]): Map<string, MemberHit> {
    const wanted = new Set(codes);
    const out = new Map<string, MemberHit>();
    for (const c of flatten(this.vs.expansion?.contains)) {
      if (c.system !== system || !c.code || !wanted.has(c.code)) continue;
      if (version && c.version && c.version !== version) continue;
      out.set(c.code, { cs: undefined, version: { version: undefined, source: undefined, declared: undefined } });
    }
    return out;
  }

  /** The evaluator of a nested value set (`#id` = contained in the root); cycles are a 400. */
  async nested(ref: string): Promise<ValueSetEvaluator> {
    const key = ref.startsWith('#') ? `${this.root.url ?? ''}${ref}` : ref;
    const self = this.vs.url ? (this.vs.version ? [this.vs.url, `${this.vs.url}|${this.vs.version}`] : [this.vs.url]) : [];
    const pathway = [...this.pathway, valueSetText(this.vs)];
    // A value set that includes itself cannot be evaluated (docs/terminology.md#errors): 400, `processing`.
    const cycle = (target: string) =>
      new FhirError(400, [toOutcomeIssue({ severity: 'error', code: 'processing', type: 'vs-invalid', id: 'VALUESET_CIRCULAR_REFERENCE', text: msg.valueSetCycle(target, pathway) })]);
    let vs: ValueSet | undefined;
    /** The canonical looked for: the reference, with the version a `default-valueset-version` pinned. */
    let sought = ref;
    if (ref.startsWith('#')) {
      vs = (this.root.contained ?? []).find((r) => r.resourceType === 'ValueSet' && r.id === ref.slice(1)) as ValueSet | undefined;
    } else {
      const split = splitCanonical(ref);
      const version = split.version ?? defaultValueSetVersion(this.tc.versionRules, split.url);
      vs = await resolveValueSet(this.tc, ref, version);
      if (!vs && version !== undefined) sought = `${split.url}|${version}`;
    }
    const target = vs?.url ? valueSetText(vs) : ref;
    // The reference (or the value set it resolves to) is already on the path.
    if ([...this.chain, ...self].includes(key) || (vs?.url && pathway.includes(target))) throw cycle(target);
    if (!vs) throw new UnknownValueSetError(sought);
    const contained = ref.startsWith('#');
    this.evaluation.statuses.valueSet(vs, valueSetPublication(this.vs));
    const identity = contained ? `${this.rootIdentity}${ref}` : `${vs.url ?? ref}|${vs.version ?? ''}`;
    return new ValueSetEvaluator(this.tc, vs, [...this.chain, ...self, key], contained ? this.root : vs, pathway, {
      evaluation: this.evaluation,
      identity,
      rootIdentity: contained ? this.rootIdentity : identity,
    });
  }
}

/** Newer version first: semver-like ones by semantic version, others by text. */
export function newerFirst(a: string, b: string): number {
  return -(compareSemver(a, b) ?? a.localeCompare(b));
}

/**
 * The includes with their index, those of `system` that name a version reordered newest first
 * among themselves (the others keep their place): of several versions, the newest answers.
 */
function newestIncludesFirst(includes: ValueSetComposeInclude[], system: string): [ValueSetComposeInclude, number][] {
  const entries = includes.map((inc, i) => [inc, i] as [ValueSetComposeInclude, number]);
  const versioned = (inc: ValueSetComposeInclude) => {
    const p = includeSystem(inc);
    return p.system === system && p.version !== undefined ? p.version : undefined;
  };
  const slots = entries.map(([inc], i) => (versioned(inc) !== undefined ? i : -1)).filter((i) => i >= 0);
  const sorted = slots.map((i) => entries[i]).sort((a, b) => newerFirst(versioned(a[0]) as string, versioned(b[0]) as string));
  slots.forEach((slot, k) => (entries[slot] = sorted[k]));
  return entries;
}

/**
 * The system and version an include names. Some published value sets (the R4 v2 tables) write
 * the version into `system` as `url|version`; that counts as `version`.
 */
export function includeSystem(inc: ValueSetComposeInclude): { system: string | undefined; version: string | undefined } {
  if (!inc.system) return { system: undefined, version: inc.version };
  const split = splitCanonical(inc.system);
  return { system: split.url, version: inc.version ?? split.version };
}

/** Every entry of a (nested) expansion `contains`. */
export function flatten(list: ValueSetExpansionContains[] | undefined): ValueSetExpansionContains[] {
  const out: ValueSetExpansionContains[] = [];
  const walk = (l: ValueSetExpansionContains[] | undefined) => {
    for (const c of l ?? []) {
      out.push(c);
      walk(c.contains);
    }
  };
  walk(list);
  return out;
}
