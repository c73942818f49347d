import type { Queryable } from '../core/database.js';
import { bulkInsert, BATCH_ROWS } from './bulk-insert.js';
import { ancestorWalker, ClosureTooLarge, DEFAULT_CLOSURE_LIMIT } from './closure.js';

/**
 * Writes the hierarchy of one code system (docs/terminology.md#hierarchy-storage): the direct
 * edges into `tx_closure` (depth 1) and, per concept with parents, its sorted ancestors as one
 * `int[]` row of `tx_ancestors`. The closure is computed and written a slice of concepts at a
 * time, so memory stays O(concepts + edges) whatever its size. Returns the number of
 * (descendant, ancestor) pairs; more than `limit` throws ClosureTooLarge. `onProgress` gets
 * the number of concepts done so far (of n).
 */
export async function writeHierarchy(
  q: Queryable,
  key: number,
  n: number,
  edges: Array<[number, number]>,
  onProgress?: (conceptsDone: number) => void,
  limit = DEFAULT_CLOSURE_LIMIT,
): Promise<number> {
  const k = { cs_key: { type: 'int', value: key } };
  await bulkInsert<[number, number]>(
    q,
    'tx_closure',
    { ...k, depth: { type: 'smallint', value: 1 } },
    [
      { name: 'descendant', type: 'int', value: (e) => e[0] },
      { name: 'ancestor', type: 'int', value: (e) => e[1] },
    ],
    edges.length,
    (i) => edges[i],
  );
  const walk = ancestorWalker(n, edges);
  let pairs = 0;
  const concepts: number[] = [];
  const lists: string[] = [];
  // Slices of about BATCH_ROWS pairs: one statement each.
  const flush = async () => {
    if (concepts.length === 0) return;
    await bulkInsert<number>(
      q,
      'tx_ancestors',
      k,
      [
        { name: 'concept', type: 'int', value: (i) => concepts[i] },
        { name: 'ancestors', type: 'text', cast: 'int[]', value: (i) => lists[i] },
      ],
      concepts.length,
      (i) => i,
    );
    concepts.length = 0;
    lists.length = 0;
  };
  let sliced = 0;
  const step = 2000;
  for (let from = 1; from <= n; from += step) {
    walk(from, Math.min(n, from + step - 1), (node, ancestors, _depths, count) => {
      pairs += count;
      sliced += count;
      if (pairs > limit) throw new ClosureTooLarge(limit);
      concepts.push(node);
      lists.push(`{${Array.from(ancestors.subarray(0, count)).sort((a, b) => a - b).join(',')}}`);
    });
    if (sliced >= BATCH_ROWS * 5 || from + step > n) {
      await flush();
      onProgress?.(Math.min(n, from + step - 1));
      sliced = 0;
    }
  }
  await flush();
  return pairs;
}
