/**
 * Version order for canonical resolution (docs/terminology.md#canonicals-and-versions): without a requested version the
 * newest wins — semantic-version order when both versions look like semver, else the most
 * recently updated.
 */

const SEMVER = /^(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/;

/** Splits `url|version` into its parts. */
export function splitCanonical(canonical: string): { url: string; version: string | undefined } {
  const bar = canonical.indexOf('|');
  if (bar < 0) return { url: canonical, version: undefined };
  const version = canonical.slice(bar + 1);
  return { url: canonical.slice(0, bar), version: version === '' ? undefined : version };
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
  return ma[4] < mb[4] ? -1 : 1;
}

/** Sorts candidates newest first. */
export function newestFirst<T extends { version: string | undefined; lastUpdated: string }>(items: T[]): T[] {
  return [...items].sort((a, b) => {
    if (a.version !== undefined && b.version !== undefined) {
      const s = compareSemver(a.version, b.version);
      if (s !== undefined && s !== 0) return -s;
    }
    return Date.parse(b.lastUpdated) - Date.parse(a.lastUpdated);
  });
}

/**
 * Whether a stored version satisfies a requested one: equal, or the request is a prefix of
 * semver parts (`1.0` matches `1.0.3`) or uses `x`/`*` wildcards.
 */
export function versionMatches(stored: string | undefined, requested: string): boolean {
  if (stored === requested) return true;
  if (stored === undefined) return false;
  const s = stored.split('.');
  const r = requested.split('.');
  if (r.length > s.length || !SEMVER.test(stored)) return false;
  return r.every((part, i) => part === 'x' || part === '*' || part === s[i]);
}
