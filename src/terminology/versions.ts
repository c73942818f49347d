/**
 * Version order and matching for canonical resolution (docs/terminology.md#canonicals-and-versions):
 * without a requested version the newest wins; a requested version matches a stored one when it
 * is equal or a wildcard pattern (`1.x`, `1.0.*`) that covers it.
 */

const SEMVER = /^(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/;
const WILDCARD = new Set(['x', 'X', '*']);

/** Splits `url|version` into its parts. */
export function splitCanonical(canonical: string): { url: string; version: string | undefined } {
  const bar = canonical.indexOf('|');
  if (bar < 0) return { url: canonical, version: undefined };
  const version = canonical.slice(bar + 1);
  return { url: canonical.slice(0, bar), version: version === '' ? undefined : version };
}

/** True when the version looks like a semantic version (`1`, `1.2`, `1.2.3`, with pre-release/build). */
export function isSemverLike(version: string | undefined): version is string {
  return version !== undefined && SEMVER.test(version);
}

/** Compares two semver-like versions; undefined when either is not semver-like. */
export function compareSemver(a: string, b: string): number | undefined {
  const ma = SEMVER.exec(a);
  const mb = SEMVER.exec(b);
  if (!ma || !mb) return undefined;
  for (let i = 1; i <= 3; i++) {
    const d = Number(ma[i] ?? 0) - Number(mb[i] ?? 0);
    if (d !== 0) return d;
  }
  // A pre-release sorts before its release.
  if (ma[4] === mb[4]) return 0;
  if (ma[4] === undefined) return 1;
  if (mb[4] === undefined) return -1;
  return comparePreRelease(ma[4], mb[4]);
}

/**
 * Semver §11: identifiers compared one by one, numeric ones as numbers and before alphanumeric
 * ones; when one list is a prefix of the other, the shorter sorts first.
 */
function comparePreRelease(a: string, b: string): number {
  const pa = a.split('.');
  const pb = b.split('.');
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    const na = /^\d+$/.test(pa[i]);
    const nb = /^\d+$/.test(pb[i]);
    if (na && nb) {
      const d = Number(pa[i]) - Number(pb[i]);
      if (d !== 0) return d;
    } else if (na !== nb) {
      return na ? -1 : 1;
    } else if (pa[i] !== pb[i]) {
      return pa[i] < pb[i] ? -1 : 1;
    }
  }
  return pa.length - pb.length;
}

type Versioned = { version: string | undefined; lastUpdated: string };

/** Later update first; equal times by version text, so the order never depends on the input's. */
function byUpdate(a: Versioned, b: Versioned): number {
  return Date.parse(b.lastUpdated) - Date.parse(a.lastUpdated) || (b.version ?? '').localeCompare(a.version ?? '');
}

/**
 * Sorts candidates newest first. Semver-like versions are ordered among themselves by semver
 * (equal ones by update time); the others (and missing versions) by update time; the two lists
 * are then merged by update time of their heads. Unlike a pairwise comparator mixing both rules
 * (not transitive: 2.0.0 > 1.0.0 by semver, 1.0.0 > draft and draft > 2.0.0 by update time), the
 * result does not depend on the order of the input.
 */
export function newestFirst<T extends Versioned>(items: T[]): T[] {
  const semver = items.filter((i) => isSemverLike(i.version)).sort((a, b) => -(compareSemver(a.version as string, b.version as string) as number) || byUpdate(a, b));
  // SNOMED CT versions by their date (docs/terminology.md#snomed-ct).
  const sct = items.filter((i) => !isSemverLike(i.version) && SCT_VERSION.test(i.version ?? '')).sort((a, b) => sctDate(b.version).localeCompare(sctDate(a.version)) || byUpdate(a, b));
  const other = items.filter((i) => !isSemverLike(i.version) && !SCT_VERSION.test(i.version ?? '')).sort(byUpdate);
  const lists = [semver, sct, other];
  const at = [0, 0, 0];
  const out: T[] = [];
  while (out.length < items.length) {
    let best = -1;
    for (let l = 0; l < lists.length; l++) {
      if (at[l] >= lists[l].length) continue;
      if (best < 0 || Date.parse(lists[l][at[l]].lastUpdated) > Date.parse(lists[best][at[best]].lastUpdated)) best = l;
    }
    out.push(lists[best][at[best]++]);
  }
  return out;
}

/** A SNOMED CT version URI (`http://snomed.info/sct/<module>/version/<yyyymmdd>`, `xsct` unpublished). */
const SCT_VERSION = /^http:\/\/snomed\.info\/x?sct\/(\d+)\/version\/(\d{8})$/;
/** A SNOMED CT edition URI without a version: it names the newest version of the edition. */
const SCT_EDITION = /^http:\/\/snomed\.info\/x?sct\/(\d+)\/?$/;

function sctDate(version: string | undefined): string {
  return SCT_VERSION.exec(version ?? '')?.[2] ?? '';
}

/** True when a requested version is a wildcard pattern (`1.x`, `1.0.*`). */
export function isVersionPattern(requested: string): boolean {
  return SCT_EDITION.test(requested) || requested.split('.').some((p) => WILDCARD.has(p));
}

/**
 * Whether a stored version satisfies a requested one: equal, or the request is a pattern whose
 * `x`/`X`/`*` parts match any part of a semver-like stored version (a trailing wildcard covers
 * the remaining parts: `1.x` matches `1.0.3`). A shorter version without wildcards is a version
 * of its own: `1` does not match `1.0.0`.
 */
export function versionMatches(stored: string | undefined, requested: string): boolean {
  if (stored === requested) return true;
  const edition = SCT_EDITION.exec(requested);
  if (edition) return SCT_VERSION.exec(stored ?? '')?.[1] === edition[1];
  if (stored === undefined || !isVersionPattern(requested) || !isSemverLike(stored)) return false;
  const s = stored.split('.');
  const r = requested.split('.');
  if (r.length > s.length) return false;
  if (r.length < s.length && !WILDCARD.has(r[r.length - 1])) return false;
  return r.every((part, i) => WILDCARD.has(part) || part === s[i]);
}

/**
 * The version parameters of a request (docs/terminology.md#version-parameters), by code system
 * url: `system-version` (the version of a code system the value set or coding leaves open),
 * `check-system-version` (the version used must match), `force-system-version` (the version used,
 * whatever the value set or coding says).
 */
export interface VersionRules {
  defaults: Map<string, string>;
  checks: Map<string, string>;
  forces: Map<string, string>;
  /** `default-valueset-version`: the version of a value set a reference without version means, by url. */
  valueSetDefaults?: Map<string, string>;
  /** The `default-valueset-version` canonicals that decided a reference (echoed in `expansion.parameter`). */
  appliedValueSetDefaults?: Set<string>;
}

/** The version a value-set reference without version means (`default-valueset-version`), noted as applied. */
export function defaultValueSetVersion(rules: VersionRules | undefined, url: string): string | undefined {
  const version = rules?.valueSetDefaults?.get(url);
  if (version !== undefined) rules?.appliedValueSetDefaults?.add(`${url}|${version}`);
  return version;
}

/** The parameter name of each rule (echoed in `expansion.parameter` when a rule was applied). */
export const VERSION_RULE_PARAMETER = { default: 'system-version', check: 'check-system-version', force: 'force-system-version' } as const;

/** Reads the version parameters (`url|version` canonicals; a canonical without version is ignored). */
export function parseVersionRules(input: Record<string, unknown>): VersionRules {
  const read = (name: string) => {
    const out = new Map<string, string>();
    const values = input[name];
    for (const v of Array.isArray(values) ? values : values === undefined ? [] : [values]) {
      if (typeof v !== 'string') continue;
      const { url, version } = splitCanonical(v);
      if (version !== undefined && !out.has(url)) out.set(url, version);
    }
    return out;
  };
  return {
    defaults: read(VERSION_RULE_PARAMETER.default),
    checks: read(VERSION_RULE_PARAMETER.check),
    forces: read(VERSION_RULE_PARAMETER.force),
    valueSetDefaults: read('default-valueset-version'),
    appliedValueSetDefaults: new Set(),
  };
}

export const NO_VERSION_RULES: VersionRules = { defaults: new Map(), checks: new Map(), forces: new Map() };

/** Where the version an include is evaluated at comes from. */
export type VersionSource = 'force' | 'include' | 'default' | 'check';

/** The version (or pattern) a value-set include of a code system is evaluated at. */
export interface EffectiveVersion {
  /** undefined: the include leaves the version open and no rule applies (the coding's version, else the newest). */
  version: string | undefined;
  source: VersionSource | undefined;
  /** The version the include itself states (`include.version`), if any. */
  declared: string | undefined;
}

/**
 * The version an include of `system` is evaluated at: `force-system-version` wins; then the
 * include's own version; for a versionless include `system-version`, then the pattern of
 * `check-system-version` (its newest match).
 */
export function effectiveVersion(rules: VersionRules, system: string, declared: string | undefined): EffectiveVersion {
  const force = rules.forces.get(system);
  if (force !== undefined) return { version: force, source: 'force', declared };
  if (declared !== undefined) return { version: declared, source: 'include', declared };
  const def = rules.defaults.get(system);
  if (def !== undefined) return { version: def, source: 'default', declared };
  const check = rules.checks.get(system);
  if (check !== undefined) return { version: check, source: 'check', declared };
  return { version: undefined, source: undefined, declared };
}

/** The `check-system-version` pattern `version` of `system` violates; undefined when allowed. */
export function checkViolation(rules: VersionRules, system: string, version: string | undefined): string | undefined {
  const check = rules.checks.get(system);
  if (check === undefined) return undefined;
  return versionMatches(version, check) ? undefined : check;
}

/** Versions as messages list them: oldest first, `a, b or c`. */
export function versionList(newestFirstVersions: string[]): string {
  const list = [...newestFirstVersions].reverse();
  return list.length <= 1 ? (list[0] ?? '') : `${list.slice(0, -1).join(', ')} or ${list[list.length - 1]}`;
}
