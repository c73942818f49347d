import type { Prefix, SearchNumber } from './values.js';

/**
 * Prefix semantics for ranges (FHIR R4 §3.1.1.4.1 and §3.1.1.4.2). The stored value is the
 * range [low, high) — NULL = unbounded — and so is the search value [ql, qh).
 *   eq  the search range contains the stored range      ne  it does not
 *   gt  the stored range goes beyond the search range   lt  it starts before it
 *   ge  gt or eq                                        le  lt or eq
 *   sa  the stored range starts after the search range  eb  it ends before it
 *   ap  the ranges overlap (Lattice's "approximately" for dates)
 */
export function dateComparison(prefix: Prefix, low: string, high: string, qlow: () => string, qhigh: () => string): string {
  // Bounds are placeholders added on first use: PostgreSQL refuses bind values a statement never uses.
  const ql = prefix === 'gt' || prefix === 'sa' ? '' : qlow();
  const qh = prefix === 'lt' || prefix === 'eb' ? '' : qhigh();
  const contained = `(${low} >= ${ql} AND ${high} <= ${qh})`;
  switch (prefix) {
    case 'eq':
      return contained;
    case 'ne':
      return `NOT COALESCE(${contained}, false)`;
    case 'gt':
      return `(${high} IS NULL OR ${high} > ${qh})`;
    case 'lt':
      return `(${low} IS NULL OR ${low} < ${ql})`;
    case 'ge':
      return `(${high} IS NULL OR ${high} > ${qh} OR ${contained})`;
    case 'le':
      return `(${low} IS NULL OR ${low} < ${ql} OR ${contained})`;
    case 'sa':
      return `${low} >= ${qh}`;
    case 'eb':
      return `${high} <= ${ql}`;
    case 'ap':
      return `((${low} IS NULL OR ${low} < ${qh}) AND (${high} IS NULL OR ${high} > ${ql}))`;
  }
}

/**
 * Prefix semantics for numbers: `eq` (and `ne`) use the precision of the search value
 * (`100` matches [99.5, 100.5)); the others compare with the value itself; `ap` is ±10 %.
 */
export function numberComparison(prefix: Prefix, column: string, n: SearchNumber, add: (v: unknown) => string): string {
  const value = (v: number): string => `${add(String(v))}::numeric`;
  switch (prefix) {
    case 'eq':
      return `(${column} >= ${value(n.value - n.halfWidth)} AND ${column} < ${value(n.value + n.halfWidth)})`;
    case 'ne':
      return `(${column} < ${value(n.value - n.halfWidth)} OR ${column} >= ${value(n.value + n.halfWidth)})`;
    case 'gt':
    case 'sa':
      return `${column} > ${value(n.value)}`;
    case 'lt':
    case 'eb':
      return `${column} < ${value(n.value)}`;
    case 'ge':
      return `${column} >= ${value(n.value)}`;
    case 'le':
      return `${column} <= ${value(n.value)}`;
    case 'ap': {
      const spread = Math.abs(n.value) * 0.1;
      return `(${column} >= ${value(n.value - spread)} AND ${column} <= ${value(n.value + spread)})`;
    }
  }
}
