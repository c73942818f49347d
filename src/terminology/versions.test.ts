import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { compareSemver, newestFirst, splitCanonical, versionMatches } from './versions.js';

describe('splitCanonical', () => {
  test('url|version', () => {
    assert.deepEqual(splitCanonical('http://loinc.org|2.77'), { url: 'http://loinc.org', version: '2.77' });
  });

  test('no bar: no version', () => {
    assert.deepEqual(splitCanonical('http://loinc.org'), { url: 'http://loinc.org', version: undefined });
  });

  test('a trailing bar is no version', () => {
    assert.deepEqual(splitCanonical('http://loinc.org|'), { url: 'http://loinc.org', version: undefined });
  });

  test('splits at the first bar; the version keeps any later one', () => {
    assert.deepEqual(splitCanonical('http://x.org/cs|1.0|extra'), { url: 'http://x.org/cs', version: '1.0|extra' });
  });

  test('a version that is not semver is kept verbatim', () => {
    assert.deepEqual(splitCanonical('http://snomed.info/sct|http://snomed.info/sct/900000000000207008/version/20240101'), {
      url: 'http://snomed.info/sct',
      version: 'http://snomed.info/sct/900000000000207008/version/20240101',
    });
  });
});

describe('compareSemver', () => {
  const sign = (a: string, b: string) => {
    const r = compareSemver(a, b);
    return r === undefined ? undefined : Math.sign(r);
  };

  test('compares major, minor and patch numerically (1.10.0 > 1.9.0)', () => {
    assert.equal(sign('1.10.0', '1.9.0'), 1);
    assert.equal(sign('1.9.0', '1.10.0'), -1);
    assert.equal(sign('2.0.0', '1.99.99'), 1);
    assert.equal(sign('1.0.10', '1.0.9'), 1);
  });

  test('missing parts count as 0: 1 = 1.0 = 1.0.0', () => {
    assert.equal(sign('1', '1.0.0'), 0);
    assert.equal(sign('1.0', '1.0.0'), 0);
    assert.equal(sign('1.1', '1.0.5'), 1);
  });

  test('a pre-release sorts before its release, after the previous release', () => {
    assert.equal(sign('1.0.0-beta', '1.0.0'), -1);
    assert.equal(sign('1.0.0', '1.0.0-beta'), 1);
    assert.equal(sign('1.0.0-alpha', '0.9.9'), 1);
  });

  test('pre-releases of the same version compare by their identifiers', () => {
    assert.equal(sign('1.0.0-alpha', '1.0.0-beta'), -1);
    assert.equal(sign('1.0.0-rc', '1.0.0-beta'), 1);
    assert.equal(sign('1.0.0-beta', '1.0.0-beta'), 0);
  });

  test('numeric pre-release identifiers compare as numbers (alpha.10 > alpha.2)', () => {
    assert.equal(sign('1.0.0-alpha.10', '1.0.0-alpha.2'), 1);
    assert.equal(sign('1.0.0-alpha.2', '1.0.0-alpha.10'), -1);
    assert.equal(sign('1.0.0-rc.11', '1.0.0-rc.9'), 1);
  });

  test('pre-release identifiers: numeric sorts before alphanumeric, a shorter prefix sorts first', () => {
    assert.equal(sign('1.0.0-1', '1.0.0-alpha'), -1);
    assert.equal(sign('1.0.0-alpha', '1.0.0-alpha.1'), -1);
    assert.equal(sign('1.0.0-alpha.beta', '1.0.0-alpha.1'), 1);
    assert.equal(sign('1.0.0-beta.2', '1.0.0-beta.11'), -1);
  });

  test('build metadata is ignored', () => {
    assert.equal(sign('1.0.0+build.1', '1.0.0+build.2'), 0);
    assert.equal(sign('1.0.1+x', '1.0.0'), 1);
  });

  test('undefined when either version is not semver-like', () => {
    assert.equal(compareSemver('v2', '1.0.0'), undefined);
    assert.equal(compareSemver('1.0.0', 'v2'), undefined);
    assert.equal(compareSemver('1.0.0.0', '1.0.0'), undefined);
    assert.equal(compareSemver('1.0.0', 'draft'), undefined);
    assert.equal(compareSemver('2020_01', '2020_02'), undefined);
  });

  test('date-like versions are semver-like (2020-01 is 2020 with pre-release 01): year first', () => {
    assert.equal(sign('2021-01', '2020-06'), 1);
    assert.equal(sign('2020-03-01', '2020-01-15'), 1);
    assert.equal(sign('20240101', '20231231'), 1);
  });
});

describe('newestFirst', () => {
  const c = (version: string | undefined, lastUpdated: string) => ({ version, lastUpdated });

  test('semver versions: highest version first, whatever was updated last', () => {
    const items = [c('1.9.0', '2024-06-01T00:00:00Z'), c('1.10.0', '2020-01-01T00:00:00Z'), c('1.2.0', '2025-01-01T00:00:00Z')];
    assert.deepEqual(
      newestFirst(items).map((i) => i.version),
      ['1.10.0', '1.9.0', '1.2.0'],
    );
  });

  test('a release comes before its pre-release', () => {
    const items = [c('2.0.0', '2020-01-01T00:00:00Z'), c('2.0.0-ballot', '2024-01-01T00:00:00Z')];
    assert.deepEqual(
      newestFirst(items).map((i) => i.version),
      ['2.0.0', '2.0.0-ballot'],
    );
  });

  test('non-semver versions: most recently updated first', () => {
    const items = [c('R-b', '2019-03-01T00:00:00Z'), c('R-a', '2021-09-01T00:00:00Z'), c('R-c', '2020-01-01T00:00:00Z')];
    assert.deepEqual(
      newestFirst(items).map((i) => i.version),
      ['R-a', 'R-c', 'R-b'],
    );
  });

  test('date-like versions order as semver (year first), not by update time', () => {
    const items = [c('2020-06', '2025-01-01T00:00:00Z'), c('2021-01', '2020-01-01T00:00:00Z')];
    assert.deepEqual(
      newestFirst(items).map((i) => i.version),
      ['2021-01', '2020-06'],
    );
  });

  test('semver against non-semver: most recently updated wins', () => {
    const items = [c('9.0.0', '2020-01-01T00:00:00Z'), c('draft', '2022-01-01T00:00:00Z')];
    assert.deepEqual(
      newestFirst(items).map((i) => i.version),
      ['draft', '9.0.0'],
    );
  });

  test('a missing version: most recently updated wins', () => {
    const items = [c('3.0.0', '2020-01-01T00:00:00Z'), c(undefined, '2023-01-01T00:00:00Z')];
    assert.deepEqual(
      newestFirst(items).map((i) => i.version),
      [undefined, '3.0.0'],
    );
  });

  test('semver-equal versions (1.0 and 1.0.0): most recently updated wins', () => {
    const items = [c('1.0', '2020-01-01T00:00:00Z'), c('1.0.0', '2021-01-01T00:00:00Z')];
    assert.deepEqual(
      newestFirst(items).map((i) => i.version),
      ['1.0.0', '1.0'],
    );
    assert.deepEqual(
      newestFirst([...items].reverse()).map((i) => i.version),
      ['1.0.0', '1.0'],
    );
  });

  test('the pick does not depend on the input order (semver, non-semver and missing versions mixed)', () => {
    // Pairwise, 2.0.0 > 1.0.0 (semver), 1.0.0 > draft (updated later), draft > 2.0.0 (updated later):
    // a pairwise comparator is not transitive here, so the result used to depend on row order.
    const items = [c('2.0.0', '2020-01-01T00:00:00Z'), c('1.0.0', '2022-01-01T00:00:00Z'), c('draft', '2021-01-01T00:00:00Z'), c(undefined, '2019-01-01T00:00:00Z')];
    const orders = [
      [0, 1, 2, 3], [1, 2, 0, 3], [2, 0, 1, 3], [2, 1, 0, 3], [0, 2, 1, 3], [1, 0, 2, 3], [3, 2, 1, 0], [3, 0, 2, 1],
    ];
    const results = new Set(orders.map((o) => JSON.stringify(newestFirst(o.map((i) => items[i])).map((i) => i.version ?? null))));
    assert.equal(results.size, 1, [...results].join(' | '));
  });

  test('semver versions keep semver order among themselves when other versions are interleaved', () => {
    const items = [c('draft', '2021-01-01T00:00:00Z'), c('1.0.0', '2022-01-01T00:00:00Z'), c('2.0.0', '2020-01-01T00:00:00Z')];
    const sorted = newestFirst(items).map((i) => i.version);
    assert.ok(sorted.indexOf('2.0.0') < sorted.indexOf('1.0.0'), sorted.join(', '));
  });

  test('equal update times: the order is still independent of the input order', () => {
    const items = [c('b-draft', '2021-01-01T00:00:00Z'), c('a-draft', '2021-01-01T00:00:00Z')];
    assert.deepEqual(
      newestFirst(items).map((i) => i.version),
      newestFirst([...items].reverse()).map((i) => i.version),
    );
  });

  test('returns a new array and leaves the input as it was', () => {
    const items = [c('1.0.0', '2020-01-01T00:00:00Z'), c('2.0.0', '2020-01-01T00:00:00Z')];
    const sorted = newestFirst(items);
    assert.notEqual(sorted, items);
    assert.deepEqual(
      items.map((i) => i.version),
      ['1.0.0', '2.0.0'],
    );
    assert.deepEqual(
      sorted.map((i) => i.version),
      ['2.0.0', '1.0.0'],
    );
  });
});

describe('versionMatches', () => {
  test('equal versions match, semver or not', () => {
    assert.equal(versionMatches('1.0.3', '1.0.3'), true);
    assert.equal(versionMatches('2020-01', '2020-01'), true);
    assert.equal(versionMatches('http://snomed.info/sct/900000000000207008/version/20240101', 'http://snomed.info/sct/900000000000207008/version/20240101'), true);
  });

  test('different full versions do not match', () => {
    assert.equal(versionMatches('1.0.3', '1.0.4'), false);
    assert.equal(versionMatches('2020-01', '2020-02'), false);
  });

  test('a stored resource without a version matches no requested version', () => {
    assert.equal(versionMatches(undefined, '1.0.0'), false);
    assert.equal(versionMatches(undefined, '*'), false);
  });

  test('a shorter version without wildcards is a version of its own, not a prefix: 1 and 1.0 do not match 1.0.3', () => {
    assert.equal(versionMatches('1.0.3', '1'), false);
    assert.equal(versionMatches('1.0.3', '1.0'), false);
    assert.equal(versionMatches('1.0.0', '1'), false);
  });

  test('parts match whole, not as string prefixes: 1.1.x does not match 1.10.0', () => {
    assert.equal(versionMatches('1.10.0', '1.1.x'), false);
    assert.equal(versionMatches('10.0.0', '1.x'), false);
  });

  test('a trailing wildcard covers the remaining parts: 1.x matches 1.0.3, 1.0.x matches 1.0.3', () => {
    assert.equal(versionMatches('1.0.3', '1.x'), true);
    assert.equal(versionMatches('1.0.3', '1.0.x'), true);
    assert.equal(versionMatches('1.2.0', '1.0.x'), false);
    assert.equal(versionMatches('1.0.3', '1.X'), true);
  });

  test('a request longer than the stored version does not match: 1.0.3 does not match 1.0', () => {
    assert.equal(versionMatches('1.0', '1.0.3'), false);
    assert.equal(versionMatches('1.0', '1.0.0'), false);
  });

  test('x and * wildcards match any part', () => {
    assert.equal(versionMatches('1.0.3', '1.x'), true);
    assert.equal(versionMatches('1.0.3', '1.*'), true);
    assert.equal(versionMatches('1.5.3', '1.x.3'), true);
    assert.equal(versionMatches('1.5.4', '1.x.3'), false);
    assert.equal(versionMatches('2.0.3', '1.x'), false);
    assert.equal(versionMatches('1.0.3', 'x'), true);
    assert.equal(versionMatches('1.0.3', '*.*.*'), true);
  });

  test('partial and wildcard matching applies only to semver-like stored versions', () => {
    assert.equal(versionMatches('2020.01.draft', '2020.*'), false);
    assert.equal(versionMatches('2020.01.draft', '2020.x'), false);
    assert.equal(versionMatches('v1.0.3', 'v1.x'), false);
  });

  test('a release request does not match its pre-release', () => {
    assert.equal(versionMatches('1.0.0-beta', '1.0.0'), false);
    assert.equal(versionMatches('1.0.0-beta', '1.0.0-beta'), true);
  });
});
