import type { Controls } from './controls.js';
import { sortKey } from './controls.js';
import type { SqlParams } from './sql-params.js';
import { searchParameter, tableFor } from '../parameters.js';

/**
 * The tables and columns with an index on (resource_type, param, <column>, id) (migration
 * 580_search_plans.sql): a `_sort` by such a parameter reads the page in index order.
 */
const ORDERED: Record<string, readonly string[] | undefined> = { string: ['value'], date: ['low', 'high'] };

/** The index table of a sort parameter (undefined for `_id`, `_lastUpdated` and unknown codes). */
export function sortTable(type: string, code: string): string | undefined {
  if (code === '_id' || code === '_lastUpdated') return undefined;
  const sp = searchParameter(type, code);
  return sp ? tableFor(sp) : undefined;
}

/**
 * The page of a search sorted by ONE parameter whose sort value has an ordering index
 * (docs/rest.md#query-plans), or undefined for any other sort (controls.ts `orderBySql` then
 * orders by a sub-select per match). Same order as `orderBySql`: the resources with a value by
 * their smallest (ascending) or largest (descending) value, then the id; then the resources
 * without one by id. The first part walks the parameter's index rows in order, keeps a row only
 * when no row of the same resource sorts before it (and once per resource: DISTINCT ON over the
 * ordered rows), and stops when the page is full; the second part is read only when the first
 * ran out (PostgreSQL's Append runs its parts in order, and LIMIT stops it).
 */
export function sortedPageSql(p: SqlParams, type: string, sort: Controls['sort'], whereSql: string, limit: number, offset: number): string | undefined {
  if (sort.length !== 1) return undefined;
  const [{ code, descending }] = sort;
  if (code === '_id' || code === '_lastUpdated') return undefined;
  const key = sortKey(type, code, descending);
  if (!ORDERED[key.table]?.includes(key.column)) return undefined;
  const direction = descending ? 'DESC' : 'ASC';
  const before = descending ? '>' : '<';
  const rows = (alias: string) =>
    `${alias}.resource_type = ${p.add(type)} AND ${alias}.param = ${p.add(code)}${key.condition ? ` AND ${key.condition(alias)}` : ''}`;
  const enough = limit + offset;
  const withValue =
    `SELECT DISTINCT ON (s.${key.column}, s.id) r.content FROM search_${key.table} s JOIN resource r ON r.resource_type = s.resource_type AND r.id = s.id` +
    ` WHERE ${rows('s')} AND s.${key.column} IS NOT NULL` +
    ` AND NOT EXISTS (SELECT 1 FROM search_${key.table} b WHERE ${rows('b')} AND b.id = s.id AND b.${key.column} ${before} s.${key.column})` +
    ` AND ${whereSql} ORDER BY s.${key.column} ${direction}, s.id ${direction} LIMIT ${enough}`;
  const withoutValue =
    `SELECT r.content FROM resource r WHERE ${whereSql}` +
    ` AND NOT EXISTS (SELECT 1 FROM search_${key.table} b WHERE ${rows('b')} AND b.id = r.id AND b.${key.column} IS NOT NULL)` +
    ` ORDER BY r.id ${direction} LIMIT ${enough}`;
  return `SELECT content FROM ((${withValue}) UNION ALL (${withoutValue})) AS page LIMIT ${limit} OFFSET ${offset}`;
}
