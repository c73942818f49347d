import type { Steps } from './steps.js';

/**
 * The transitive closure of a hierarchy given as parent edges: computed by the in-memory index
 * when it is built (so every hierarchy question is a binary search), and walked at write time
 * to bound its size (docs/terminology.md#hierarchy-storage).
 *
 * For each concept a breadth-first walk up its parents collects every ancestor with its
 * shortest distance: a multi-parent DAG yields the union of all paths, and a visited stamp per
 * walk makes cycles terminate (a concept in a cycle is simply not its own ancestor). Work is
 * proportional to the size of the closure times the parents per concept — a SNOMED-sized system
 * (350k concepts, ~10M pairs) stays within seconds and typed arrays keep memory compact.
 */
export interface Closure {
  /** Number of (descendant, ancestor) pairs. */
  size: number;
  descendant: Int32Array;
  ancestor: Int32Array;
  /** Shortest path length, 1 = direct parent. */
  depth: Int16Array;
}

/** Thrown when a hierarchy's closure would exceed the limit (a pathological, e.g. very deep chain). */
export class ClosureTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`hierarchy closure exceeds ${limit} pairs`);
  }
}

/** Default bound on closure pairs: SNOMED CT needs ~10M; a 100k-deep chain would need 5·10⁹. */
export const DEFAULT_CLOSURE_LIMIT = 60_000_000;

/**
 * Computes the closure of concepts 1..n from `[child, parent]` edges.
 */
export function computeClosure(n: number, edges: Array<[number, number]>, limit = DEFAULT_CLOSURE_LIMIT): Closure {
  let capacity = Math.max(16, edges.length * 4);
  let descendant = new Int32Array(capacity);
  let ancestor = new Int32Array(capacity);
  let depth = new Int16Array(capacity);
  let size = 0;
  const grow = () => {
    if (capacity >= limit) throw new ClosureTooLarge(limit);
    capacity = Math.min(limit, capacity * 2);
    const d = new Int32Array(capacity);
    d.set(descendant);
    descendant = d;
    const a = new Int32Array(capacity);
    a.set(ancestor);
    ancestor = a;
    const h = new Int16Array(capacity);
    h.set(depth);
    depth = h;
  };
  walkAncestors(n, edges, (node, ancestors, depths, count) => {
    for (let k = 0; k < count; k++) {
      if (size === capacity) grow();
      descendant[size] = node;
      ancestor[size] = ancestors[k];
      depth[size] = depths[k] > 32767 ? 32767 : depths[k];
      size++;
    }
  });
  return { size, descendant, ancestor, depth };
}

/**
 * Visits every non-root concept 1..n once with its ancestors (`ancestors[0..count)`, in
 * breadth-first order, `depths[k]` the shortest distance, 1 = direct parent). The arrays are
 * reused between calls: copy what you keep. Memory is O(n + edges), whatever the closure's size,
 * so callers can write the closure in batches (docs/terminology.md#hierarchy-storage).
 */
export function walkAncestors(
  n: number,
  edges: Array<[number, number]>,
  visit: (node: number, ancestors: Int32Array, depths: Int32Array, count: number) => void,
): void {
  ancestorWalker(n, edges)(1, n, visit);
}

/** `walkAncestors` over a range of concepts at a time (the adjacency is built once). */
export function ancestorWalker(
  n: number,
  edges: Array<[number, number]>,
): (from: number, to: number, visit: (node: number, ancestors: Int32Array, depths: Int32Array, count: number) => void) => void {
  // Compressed adjacency (child → parents) in two arrays.
  const start = new Int32Array(n + 2);
  for (const [child] of edges) start[child + 1]++;
  for (let i = 1; i <= n + 1; i++) start[i] += start[i - 1];
  const parents = new Int32Array(edges.length);
  const fill = start.slice();
  for (const [child, parent] of edges) parents[fill[child]++] = parent;
  return walkerOver(n, start, parents);
}

/** Nodes walked between two yields of `ancestorListSteps` (some milliseconds of work). */
const NODES_PER_STEP = 20_000;

/**
 * Every proper ancestor of each concept 1..n, as lists sorted ascending (`list[start[id]..start[id + 1])`),
 * from the parents in the same layout: what the in-memory index keeps, made without the
 * closure's descendant and depth columns (a SNOMED CT edition's closure is ~10 million pairs).
 * Throws ClosureTooLarge past `limit` pairs. As steps (steps.ts): a yield every NODES_PER_STEP concepts.
 */
export function* ancestorListSteps(n: number, parentStart: Int32Array, parentList: Int32Array, limit = DEFAULT_CLOSURE_LIMIT): Steps<{ start: Int32Array; list: Int32Array }> {
  const start = new Int32Array(n + 2);
  let list = new Int32Array(Math.max(16, Math.min(limit, parentList.length * 4)));
  let size = 0;
  const walk = walkerOver(n, parentStart, parentList);
  for (let from = 1; from <= n; from += NODES_PER_STEP) {
    walk(from, Math.min(n, from + NODES_PER_STEP - 1), (node, ancestors, _depths, count) => {
      if (size + count > limit) throw new ClosureTooLarge(limit);
      if (size + count > list.length) {
        const bigger = new Int32Array(Math.min(limit, Math.max(size + count, list.length * 2)));
        bigger.set(list.subarray(0, size));
        list = bigger;
      }
      list.set(ancestors.subarray(0, count), size);
      list.subarray(size, size + count).sort();
      size += count;
      start[node + 1] = size;
    });
    yield;
  }
  // Roots (and ids without a concept) end where the concept before them ends.
  for (let id = 1; id <= n + 1; id++) if (start[id] < start[id - 1]) start[id] = start[id - 1];
  return { start, list: list.slice(0, size) };
}

/** The walker over an adjacency already compressed (child → parents: `parents[start[c]..start[c + 1])`). */
function walkerOver(
  n: number,
  start: Int32Array,
  parents: Int32Array,
): (from: number, to: number, visit: (node: number, ancestors: Int32Array, depths: Int32Array, count: number) => void) => void {
  const stamp = new Int32Array(n + 1);
  const queue = new Int32Array(n + 1);
  const dist = new Int32Array(n + 1);
  const depths = new Int32Array(n + 1);
  return (from, to, visit) => {
    for (let node = from; node <= to; node++) {
      if (start[node] === start[node + 1]) continue; // a root
      stamp[node] = node;
      let head = 0;
      let tail = 0;
      queue[tail++] = node;
      dist[node] = 0;
      while (head < tail) {
        const current = queue[head++];
        const d = dist[current] + 1;
        for (let e = start[current]; e < start[current + 1]; e++) {
          const p = parents[e];
          if (stamp[p] === node) continue;
          stamp[p] = node;
          dist[p] = d;
          queue[tail++] = p;
        }
      }
      // queue[1..tail) are the ancestors in breadth-first order.
      const count = tail - 1;
      const ancestors = queue.subarray(1, tail);
      for (let k = 0; k < count; k++) depths[k] = dist[ancestors[k]];
      visit(node, ancestors, depths, count);
    }
  };
}
