import type { IdList } from './graph.js';

/**
 * Sets of concept ids as sorted Int32Arrays without duplicates: the evaluator's currency
 * (docs/terminology.md#snomed-ct-expression-constraints-ecl). Every operation is linear in its
 * inputs (or n log n for an unsorted gathering).
 */

export const EMPTY: Int32Array = new Int32Array(0);

/** A copy of a sorted id list as an Int32Array. */
export function fromSorted(list: IdList): Int32Array {
  return list instanceof Int32Array ? list : Int32Array.from(list);
}

/** Sorts and removes duplicates (a bitmap over the range for large dense lists). */
export function fromUnsorted(ids: number[] | Int32Array): Int32Array {
  if (ids.length > 4096) {
    let max = -1;
    let min = 0;
    for (let i = 0; i < ids.length; i++) {
      if (ids[i] > max) max = ids[i];
      if (ids[i] < min) min = ids[i];
    }
    if (min >= 0 && max < ids.length * 16) {
      const mark = new Uint8Array(max + 1);
      let count = 0;
      for (let i = 0; i < ids.length; i++)
        if (!mark[ids[i]]) {
          mark[ids[i]] = 1;
          count++;
        }
      const out = new Int32Array(count);
      let n = 0;
      for (let x = 0; x <= max; x++) if (mark[x]) out[n++] = x;
      return out;
    }
  }
  const a = ids instanceof Int32Array ? ids : Int32Array.from(ids);
  a.sort();
  let n = 0;
  for (let i = 0; i < a.length; i++) if (i === 0 || a[i] !== a[i - 1]) a[n++] = a[i]!;
  return n === a.length ? a : a.slice(0, n);
}

export function intersect(a: IdList, b: IdList): Int32Array {
  const out = new Int32Array(Math.min(a.length, b.length));
  let i = 0;
  let j = 0;
  let n = 0;
  while (i < a.length && j < b.length) {
    const x = a[i];
    const y = b[j];
    if (x === y) {
      out[n++] = x;
      i++;
      j++;
    } else if (x < y) i++;
    else j++;
  }
  return out.slice(0, n);
}

export function union(a: IdList, b: IdList): Int32Array {
  const out = new Int32Array(a.length + b.length);
  let i = 0;
  let j = 0;
  let n = 0;
  while (i < a.length && j < b.length) {
    const x = a[i];
    const y = b[j];
    if (x === y) {
      out[n++] = x;
      i++;
      j++;
    } else if (x < y) {
      out[n++] = x;
      i++;
    } else {
      out[n++] = y;
      j++;
    }
  }
  while (i < a.length) out[n++] = a[i++]!;
  while (j < b.length) out[n++] = b[j++]!;
  return out.slice(0, n);
}

export function minus(a: IdList, b: IdList): Int32Array {
  const out = new Int32Array(a.length);
  let i = 0;
  let j = 0;
  let n = 0;
  while (i < a.length) {
    const x = a[i];
    while (j < b.length && b[j] < x) j++;
    if (j >= b.length || b[j] !== x) out[n++] = x;
    i++;
  }
  return out.slice(0, n);
}

/** Binary search. */
export function has(a: IdList, x: number): boolean {
  let lo = 0;
  let hi = a.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const v = a[mid];
    if (v === x) return true;
    if (v < x) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}

/** The union of many sorted lists: a bitmap over their range when large, else sort. */
export function unionMany(lists: IdList[]): Int32Array {
  if (lists.length === 0) return EMPTY;
  if (lists.length === 1) return fromSorted(lists[0]).slice();
  let total = 0;
  let max = -1;
  for (const l of lists) {
    total += l.length;
    if (l.length && l[l.length - 1] > max) max = l[l.length - 1]!;
  }
  if (total === 0) return EMPTY;
  if (total < 4096 || max > total * 64) {
    const all = new Int32Array(total);
    let n = 0;
    for (const l of lists) for (let i = 0; i < l.length; i++) all[n++] = l[i]!;
    return fromUnsorted(all);
  }
  const mark = new Uint8Array(max + 1);
  let count = 0;
  for (const l of lists)
    for (let i = 0; i < l.length; i++) {
      const x = l[i];
      if (!mark[x]) {
        mark[x] = 1;
        count++;
      }
    }
  const out = new Int32Array(count);
  let n = 0;
  for (let x = 0; x <= max; x++) if (mark[x]) out[n++] = x;
  return out;
}

/** A membership test built once for many lookups: a bitmap for large sets, binary search else. */
export class Membership {
  private readonly bits?: Uint8Array;

  constructor(readonly ids: Int32Array) {
    if (ids.length > 256) {
      const max = ids[ids.length - 1];
      if (max < ids.length * 64 + 65536) {
        this.bits = new Uint8Array(max + 1);
        for (let i = 0; i < ids.length; i++) this.bits[ids[i]] = 1;
      }
    }
  }

  has(x: number): boolean {
    if (this.bits) return x >= 0 && x < this.bits.length && this.bits[x] === 1;
    return has(this.ids, x);
  }
}
