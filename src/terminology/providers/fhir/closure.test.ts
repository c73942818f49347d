import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { CodeSystem } from '@medplum/fhirtypes';
import { ClosureTooLarge, computeClosure, type Closure } from './closure.js';
import { codeSystemRows } from './code-system-rows.js';

/** The pairs of a closure as sorted `descendant>ancestor@depth` strings (order of rows is not a contract). */
function pairs(c: Closure): string[] {
  const out: string[] = [];
  for (let i = 0; i < c.size; i++) out.push(`${c.descendant[i]}>${c.ancestor[i]}@${c.depth[i]}`);
  return out.sort();
}

/** The closure of a CodeSystem as the index stores it (codeSystemRows → computeClosure), by code. */
function codeClosure(cs: CodeSystem): string[] {
  const rows = codeSystemRows(cs);
  const c = computeClosure(rows.concepts.length, rows.edges);
  const code = (id: number) => rows.concepts[id - 1].code;
  const out: string[] = [];
  for (let i = 0; i < c.size; i++) out.push(`${code(c.descendant[i])}>${code(c.ancestor[i])}@${c.depth[i]}`);
  return out.sort();
}

describe('computeClosure', () => {
  test('concepts without edges are roots: no pairs', () => {
    const c = computeClosure(3, []);
    assert.equal(c.size, 0);
    assert.deepEqual(pairs(c), []);
  });

  test('a chain yields every ancestor with its distance', () => {
    // 3 → 2 → 1
    assert.deepEqual(pairs(computeClosure(3, [[3, 2], [2, 1]])), ['2>1@1', '3>1@2', '3>2@1']);
  });

  test('a diamond yields one pair per ancestor (two paths to 1 give one 4>1 pair)', () => {
    // 4 → 2 → 1 and 4 → 3 → 1
    const c = computeClosure(4, [[4, 2], [4, 3], [2, 1], [3, 1]]);
    assert.equal(c.size, 5);
    assert.deepEqual(pairs(c), ['2>1@1', '3>1@1', '4>1@2', '4>2@1', '4>3@1']);
  });

  test('two paths of different length keep the shortest depth, whichever edge comes first', () => {
    // 5 → 4 → 3 → 2 → 1 (long path listed first) and 5 → 1 directly.
    const long: Array<[number, number]> = [[5, 4], [4, 3], [3, 2], [2, 1]];
    for (const edges of [[...long, [5, 1]], [[5, 1], ...long]] as Array<Array<[number, number]>>) {
      const c = computeClosure(5, edges);
      assert.deepEqual(pairs(c), ['2>1@1', '3>1@2', '3>2@1', '4>1@3', '4>2@2', '4>3@1', '5>1@1', '5>2@3', '5>3@2', '5>4@1']);
    }
  });

  test('a diamond with unequal arms keeps the shorter arm’s depth', () => {
    // 6 → 5 → 4 → 1 and 6 → 2 → 1: 6>1 is at depth 2, not 3.
    const c = computeClosure(6, [[6, 5], [5, 4], [4, 1], [6, 2], [2, 1]]);
    assert.ok(pairs(c).includes('6>1@2'));
    assert.equal(pairs(c).filter((p) => p.startsWith('6>1@')).length, 1);
  });

  test('duplicate edges give one pair', () => {
    assert.deepEqual(pairs(computeClosure(2, [[2, 1], [2, 1], [2, 1]])), ['2>1@1']);
  });

  test('a two-concept cycle terminates; a concept in a cycle is not its own ancestor', () => {
    assert.deepEqual(pairs(computeClosure(2, [[1, 2], [2, 1]])), ['1>2@1', '2>1@1']);
  });

  test('a three-concept cycle: each reaches the other two, at the shortest distance round the cycle', () => {
    // 1 → 2 → 3 → 1
    assert.deepEqual(pairs(computeClosure(3, [[1, 2], [2, 3], [3, 1]])), ['1>2@1', '1>3@2', '2>1@2', '2>3@1', '3>1@1', '3>2@2']);
  });

  test('a self-loop adds nothing', () => {
    assert.equal(computeClosure(1, [[1, 1]]).size, 0);
  });

  test('a concept hanging off a cycle reaches the whole cycle', () => {
    // 1 → 2 → 3 → 1, and 4 → 1
    const mine = pairs(computeClosure(4, [[1, 2], [2, 3], [3, 1], [4, 1]])).filter((p) => p.startsWith('4>'));
    assert.deepEqual(mine, ['4>1@1', '4>2@2', '4>3@3']);
  });

  test('a deep chain (20 levels): every pair, depth = distance', () => {
    const n = 20;
    const edges: Array<[number, number]> = [];
    for (let i = 2; i <= n; i++) edges.push([i, i - 1]);
    const c = computeClosure(n, edges);
    assert.equal(c.size, (n * (n - 1)) / 2);
    const expected: string[] = [];
    for (let d = 2; d <= n; d++) for (let a = 1; a < d; a++) expected.push(`${d}>${a}@${d - a}`);
    assert.deepEqual(pairs(c), expected.sort());
    assert.ok(pairs(c).includes('20>1@19'));
  });

  test('the arrays grow past their initial capacity without losing pairs', () => {
    // 1 edge → initial capacity 16; a 40-chain has 780 pairs.
    const edges: Array<[number, number]> = [];
    for (let i = 2; i <= 40; i++) edges.push([i, i - 1]);
    const c = computeClosure(40, edges);
    assert.equal(c.size, 780);
    assert.equal(new Set(pairs(c)).size, 780);
    assert.ok(pairs(c).includes('40>1@39'));
  });

  test('a closure over the limit throws ClosureTooLarge; exactly at the limit is fine', () => {
    // A 10-chain has 45 pairs.
    const edges: Array<[number, number]> = [];
    for (let i = 2; i <= 10; i++) edges.push([i, i - 1]);
    assert.equal(computeClosure(10, edges, 45).size, 45);
    assert.throws(
      () => computeClosure(10, edges, 44),
      (err: unknown) => err instanceof ClosureTooLarge && err.limit === 44 && err.message === 'hierarchy closure exceeds 44 pairs',
    );
  });
});

describe('closure of a CodeSystem (codeSystemRows → computeClosure)', () => {
  const system = 'http://example.org/cs';
  /** A complete code system with these concepts. */
  const codeSystem = (concept: CodeSystem['concept']): CodeSystem => ({ resourceType: 'CodeSystem', status: 'active', content: 'complete', url: system, concept });
  // A concept C with two parents A and B and a child D, stated three ways.
  const expected = ['C>A@1', 'C>B@1', 'D>A@2', 'D>B@2', 'D>C@1'];

  test('nested concepts: a code nested under two parents is one concept with two parents', () => {
    const cs = codeSystem([
      { code: 'A', concept: [{ code: 'C', concept: [{ code: 'D' }] }] },
      { code: 'B', concept: [{ code: 'C' }] },
    ]);
    assert.deepEqual(codeClosure(cs), expected);
  });

  test('`parent` properties', () => {
    const cs = codeSystem([
      { code: 'A' },
      { code: 'B' },
      { code: 'C', property: [{ code: 'parent', valueCode: 'A' }, { code: 'parent', valueCode: 'B' }] },
      { code: 'D', property: [{ code: 'parent', valueCode: 'C' }] },
    ]);
    assert.deepEqual(codeClosure(cs), expected);
  });

  test('`child` properties', () => {
    const cs = codeSystem([
      { code: 'A', property: [{ code: 'child', valueCode: 'C' }] },
      { code: 'B', property: [{ code: 'child', valueCode: 'C' }] },
      { code: 'C', property: [{ code: 'child', valueCode: 'D' }] },
      { code: 'D' },
    ]);
    assert.deepEqual(codeClosure(cs), expected);
  });

  test('nesting and properties combined: a shortcut `parent` property gives the shorter depth', () => {
    // A > B > C by nesting; C also says parent = A.
    const cs: CodeSystem = {
      resourceType: 'CodeSystem',
      status: 'active',
      content: 'complete',
      url: system,
      concept: [{ code: 'A', concept: [{ code: 'B', concept: [{ code: 'C', property: [{ code: 'parent', valueCode: 'A' }] }] }] }],
    };
    assert.deepEqual(codeClosure(cs), ['B>A@1', 'C>A@1', 'C>B@1']);
  });

  test('a cycle stated by properties terminates', () => {
    const cs = codeSystem([
      { code: 'A', property: [{ code: 'parent', valueCode: 'B' }] },
      { code: 'B', property: [{ code: 'parent', valueCode: 'A' }] },
    ]);
    assert.deepEqual(codeClosure(cs), ['A>B@1', 'B>A@1']);
  });
});
