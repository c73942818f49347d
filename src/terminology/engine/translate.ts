import type { CodeableConcept, Coding, ConceptMap, ConceptMapGroup, ConceptMapGroupElementTarget } from '@medplum/fhirtypes';
import { splitCanonical, versionMatches } from '../versions.js';

/**
 * ConceptMap translation (docs/terminology.md#translate): the matches a set of maps gives for
 * one coding, forwards (source code → targets) or in reverse (target code → the source codes
 * that map to it). Pure: the maps are chosen by the caller (concept-maps.ts).
 */

/** R4 equivalence → the R5 relationship of the same mapping. */
const RELATIONSHIP: Record<string, string> = {
  relatedto: 'related-to',
  equivalent: 'equivalent',
  equal: 'equivalent',
  wider: 'source-is-narrower-than-target',
  subsumes: 'source-is-narrower-than-target',
  narrower: 'source-is-broader-than-target',
  specializes: 'source-is-broader-than-target',
  inexact: 'related-to',
  unmatched: 'not-related-to',
  disjoint: 'not-related-to',
};

/** Equivalences that do not translate (R4 `$translate` output `result`). */
const NO_TRANSLATION = new Set(['unmatched', 'disjoint']);

/** How deep `unmapped.mode = other-map` may chain maps. */
const MAX_MAP_CHAIN = 5;

export interface TranslateQuery {
  /** The code to translate (a target code when `reverse`). */
  coding: { system: string; version?: string; code: string };
  reverse: boolean;
  /** The system of the other side: the target system sought (forward) or the source system (reverse). */
  otherSystem?: string;
  /** `dependency` inputs: element (a property url/code) and concept. */
  dependencies: Array<{ element?: string; concept?: CodeableConcept }>;
}

export interface TranslateMatch {
  equivalence: string;
  concept?: Coding;
  product?: Array<{ element: string; concept: Coding }>;
  source?: Coding;
  originMap?: string;
  relationship?: string;
}

/**
 * The matches of `query` in `maps`, in map and group order. `unmapped` applies to a group whose
 * elements do not list the code (forward only); `other-map` is followed through `more`.
 */
export async function translateCoding(
  maps: ConceptMap[],
  query: TranslateQuery,
  more: (canonical: string) => Promise<ConceptMap | undefined>,
  depth = 0,
): Promise<TranslateMatch[]> {
  const matches: TranslateMatch[] = [];
  for (const map of maps) {
    const origin = map.url ? `${map.url}${map.version ? `|${map.version}` : ''}` : undefined;
    for (const group of map.group ?? []) {
      if (query.reverse) matches.push(...reverseInGroup(group, query, origin));
      else matches.push(...(await forwardInGroup(group, query, origin, more, depth)));
    }
  }
  return matches;
}

/** True when at least one match translates (R4: not `unmatched`/`disjoint`). */
export function translated(matches: TranslateMatch[]): boolean {
  return matches.some((m) => !NO_TRANSLATION.has(m.equivalence));
}

async function forwardInGroup(
  group: ConceptMapGroup,
  query: TranslateQuery,
  origin: string | undefined,
  more: (canonical: string) => Promise<ConceptMap | undefined>,
  depth: number,
): Promise<TranslateMatch[]> {
  const { coding } = query;
  if (!sameSystem(group.source, group.sourceVersion, coding.system, coding.version)) return [];
  if (query.otherSystem !== undefined && group.target !== query.otherSystem) return [];
  const elements = (group.element ?? []).filter((e) => e.code === coding.code);
  if (elements.length > 0) {
    return elements.flatMap((e) =>
      (e.target ?? [])
        .filter((t) => dependsOnMet(t, query.dependencies))
        .map((t) => match(t.equivalence ?? 'relatedto', targetCoding(group, t), origin, t)),
    );
  }
  const unmapped = group.unmapped;
  switch (unmapped?.mode) {
    case 'provided':
      return [match('equal', { system: group.target, ...(group.targetVersion ? { version: group.targetVersion } : {}), code: coding.code }, origin)];
    case 'fixed':
      if (!unmapped.code) return [];
      return [match('relatedto', targetCoding(group, { code: unmapped.code, display: unmapped.display }), origin)];
    case 'other-map': {
      if (!unmapped.url || depth >= MAX_MAP_CHAIN) return [];
      const next = await more(unmapped.url);
      return next ? translateCoding([next], query, more, depth + 1) : [];
    }
    default:
      return [];
  }
}

function reverseInGroup(group: ConceptMapGroup, query: TranslateQuery, origin: string | undefined): TranslateMatch[] {
  const { coding } = query;
  if (!sameSystem(group.target, group.targetVersion, coding.system, coding.version)) return [];
  if (query.otherSystem !== undefined && group.source !== query.otherSystem) return [];
  const matches: TranslateMatch[] = [];
  for (const element of group.element ?? []) {
    for (const t of element.target ?? []) {
      if (t.code !== coding.code || !dependsOnMet(t, query.dependencies)) continue;
      const source = clean({ system: group.source, version: group.sourceVersion, code: element.code, display: element.display });
      matches.push({ ...match(t.equivalence ?? 'relatedto', targetCoding(group, t), origin, t), source });
    }
  }
  return matches;
}

function match(equivalence: string, concept: Coding | undefined, origin: string | undefined, target?: ConceptMapGroupElementTarget): TranslateMatch {
  const product = (target?.product ?? [])
    .filter((p) => p.property && p.value)
    .map((p) => ({ element: p.property, concept: clean({ system: p.system, code: p.value, display: p.display }) }));
  return {
    equivalence,
    concept: concept?.code ? concept : undefined,
    product: product.length > 0 ? product : undefined,
    originMap: origin,
    relationship: RELATIONSHIP[equivalence],
  };
}

/** The target coding of a mapping, with only what the map states. */
function targetCoding(group: ConceptMapGroup, t: { code?: string; display?: string }): Coding | undefined {
  return t.code ? clean({ system: group.target, version: group.targetVersion, code: t.code, display: t.display }) : undefined;
}

/** A group side applies to a coding: same system, and versions compatible when both are given. */
function sameSystem(groupSystem: string | undefined, groupVersion: string | undefined, system: string, version: string | undefined): boolean {
  const split = splitCanonical(groupSystem ?? '');
  if (split.url !== system) return false;
  const stated = groupVersion ?? split.version;
  return version === undefined || stated === undefined || versionMatches(stated, version) || versionMatches(version, stated);
}

/**
 * A target that depends on other elements applies when no dependency was given, or when every
 * one of its `dependsOn` is given (same element, a coding with that value and system).
 */
function dependsOnMet(target: ConceptMapGroupElementTarget, given: TranslateQuery['dependencies']): boolean {
  if (!target.dependsOn?.length || given.length === 0) return true;
  return target.dependsOn.every((d) =>
    given.some(
      (g) =>
        g.element === d.property &&
        (g.concept?.coding ?? []).some((c) => c.code === d.value && (d.system === undefined || c.system === undefined || c.system === d.system)),
    ),
  );
}

/** Drops absent fields (the answer states only what the map states). */
function clean<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined && v !== '')) as T;
}
