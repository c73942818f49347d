import type { Queryable } from '../../core/database.js';
import { bulkInsert } from './bulk-insert.js';
import { ancestorWalker, ClosureTooLarge, DEFAULT_CLOSURE_LIMIT } from '../providers/fhir/closure.js';

/**
 * Writes the hierarchy of one code system (docs/terminology.md#hierarchy-storage): its direct
 * edges into `tx_closure` (depth 1) — all the database keeps; the transitive closure is computed
 * by the in-memory index when it is built. The closure is still walked here, a slice of
 * concepts at a time in O(concepts + edges) memory, to refuse a hierarchy whose closure would
 * be larger than `limit` pairs (ClosureTooLarge) before it is stored. Returns the number of
 * (descendant, ancestor) pairs; `onProgress` gets the number of concepts walked so far (of n).
 */
export async function writeHierarchy(
  q: Queryable,
  key: number,
  n: number,
  edges: Array<[number, number]>,
  onProgress?: (conceptsDone: number) => void,
  limit = DEFAULT_CLOSURE_LIMIT,
): Promise<number> {
  const pairs = closureSize(n, edges, limit, onProgress);
  await writeEdges(q, key, edges);
  return pairs;
}

/** Inserts direct edges `[child, parent]` (new ones: the caller deduplicates) of index `key`. */
export async function writeEdges(q: Queryable, key: number, edges: Array<[number, number]>): Promise<void> {
  await bulkInsert<[number, number]>(
    q,
    'tx_closure',
    { cs_key: { type: 'int', value: key }, depth: { type: 'smallint', value: 1 } },
    [
      { name: 'descendant', type: 'int', value: (e) => e[0] },
      { name: 'ancestor', type: 'int', value: (e) => e[1] },
    ],
    edges.length,
    (i) => edges[i],
  );
}

/** The number of (descendant, ancestor) pairs of the closure of concepts 1..n; more than `limit` throws ClosureTooLarge. */
export function closureSize(n: number, edges: Array<[number, number]>, limit = DEFAULT_CLOSURE_LIMIT, onProgress?: (conceptsDone: number) => void): number {
  const walk = ancestorWalker(n, edges);
  let pairs = 0;
  const step = 20_000;
  for (let from = 1; from <= n; from += step) {
    const to = Math.min(n, from + step - 1);
    walk(from, to, (_node, _ancestors, _depths, count) => {
      pairs += count;
      if (pairs > limit) throw new ClosureTooLarge(limit);
    });
    onProgress?.(to);
  }
  return pairs;
}
