/**
 * The transitive closure of a hierarchy given as parent edges, computed once at write time so
 * every hierarchy question at request time is one index probe.
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
  // Compressed adjacency (child → parents) in two arrays.
  const start = new Int32Array(n + 2);
  for (const [child] of edges) start[child + 1]++;
  for (let i = 1; i <= n + 1; i++) start[i] += start[i - 1];
  const parents = new Int32Array(edges.length);
  const fill = start.slice();
  for (const [child, parent] of edges) parents[fill[child]++] = parent;

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

  const stamp = new Int32Array(n + 1);
  const queue = new Int32Array(n + 1);
  const dist = new Int32Array(n + 1);
  for (let node = 1; node <= n; node++) {
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
        if (size === capacity) grow();
        descendant[size] = node;
        ancestor[size] = p;
        depth[size] = d > 32767 ? 32767 : d;
        size++;
      }
    }
  }
  return { size, descendant, ancestor, depth };
}
