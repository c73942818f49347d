import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { CodeSystem } from '@medplum/fhirtypes';
import { ancestorListSteps, ClosureTooLarge, computeClosure, type Closure } from './closure.js';
import { finish } from './steps.js';
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

describe('ancestorListSteps (what the in-memory index keeps)', () => {
  const ancestorLists = (n: number, start: Int32Array, list: Int32Array, limit?: number) => finish(ancestorListSteps(n, start, list, limit));
  /** Parents of concepts 1..n as the index keeps them: `list[start[c]..start[c + 1])`. */
  function parentCsr(n: number, edges: Array<[number, number]>): { start: Int32Array; list: Int32Array } {
    const start = new Int32Array(n + 2);
    for (const [child] of edges) start[child + 1]++;
    for (let i = 1; i <= n + 1; i++) start[i] += start[i - 1];
    const fill = start.slice();
    const list = new Int32Array(edges.length);
    for (const [child, parent] of edges) list[fill[child]++] = parent;
    return { start, list };
  }
  /** Each concept's ancestors, `id:a,b,c` ascending. */
  const listed = (n: number, a: { start: Int32Array; list: Int32Array }) =>
    Array.from({ length: n }, (_, i) => `${i + 1}:${[...a.list.subarray(a.start[i + 1], a.start[i + 2])].join(',')}`);
  const fromClosure = (n: number, c: Closure) =>
    Array.from({ length: n }, (_, i) => {
      const mine: number[] = [];
      for (let k = 0; k < c.size; k++) if (c.descendant[k] === i + 1) mine.push(c.ancestor[k]);
      return `${i + 1}:${mine.sort((x, y) => x - y).join(',')}`;
    });

  test('the closure grouped by concept, each list ascending; roots, gaps and cycles included', () => {
    // 1 root; 2, 3 under 1; 4 under 2 and 3 (twice); 5 and 6 a cycle under 4; 7 has no concept; 8 under 6.
    const edges: Array<[number, number]> = [[2, 1], [3, 1], [4, 3], [4, 2], [4, 2], [5, 4], [5, 6], [6, 5], [8, 6]];
    const got = listed(8, ancestorLists(8, parentCsr(8, edges).start, parentCsr(8, edges).list));
    assert.deepEqual(got, ['1:', '2:1', '3:1', '4:1,2,3', '5:1,2,3,4,6', '6:1,2,3,4,5', '7:', '8:1,2,3,4,5,6']);
    assert.deepEqual(got, fromClosure(8, computeClosure(8, edges)));
  });

  test('random hierarchies: the same ancestors as computeClosure', () => {
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
    for (let round = 0; round < 20; round++) {
      const n = 2 + Math.floor(random() * 60);
      const edges: Array<[number, number]> = [];
      for (let e = 0; e < n * 2; e++) edges.push([1 + Math.floor(random() * n), 1 + Math.floor(random() * n)]);
      const csr = parentCsr(n, edges);
      assert.deepEqual(listed(n, ancestorLists(n, csr.start, csr.list)), fromClosure(n, computeClosure(n, edges)), `round ${round}`);
    }
  });

  test('over the limit throws ClosureTooLarge', () => {
    const edges: Array<[number, number]> = [];
    for (let i = 2; i <= 10; i++) edges.push([i, i - 1]);
    const csr = parentCsr(10, edges);
    assert.equal(ancestorLists(10, csr.start, csr.list, 45).list.length, 45);
    assert.throws(() => ancestorLists(10, csr.start, csr.list, 44), ClosureTooLarge);
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
