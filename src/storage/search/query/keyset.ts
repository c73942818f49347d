import { badRequest } from '../../../fhir/outcome.js';
import type { Controls } from './controls.js';
import type { SqlParams } from './sql-params.js';

/**
 * Keyset paging (docs/rest.md#search): a page that another follows names, in its `next` link's
 * `_cursor`, the sort key of its last match; the next page reads from there through the index
 * that yields the order (resource_type_updated, resource_pkey) instead of skipping `_offset`
 * rows. Only orders by columns of `resource` are keyed: the default (`_lastUpdated`, then id),
 * `_sort=[-]_lastUpdated` and `_sort=[-]_id`; other sorts page by `_offset`.
 */
export interface Keyset {
  /** The columns of the key, in order, and the direction of all of them. */
  columns: Array<'last_updated' | 'id'>;
  descending: boolean;
}

/** The keyset of a sort, or undefined when the sort is not keyed. */
export function keysetOf(sort: Controls['sort']): Keyset | undefined {
  if (sort.length === 0) return { columns: ['last_updated', 'id'], descending: false };
  if (sort.length !== 1) return undefined;
  const [{ code, descending }] = sort;
  if (code === '_lastUpdated') return { columns: ['last_updated', 'id'], descending };
  if (code === '_id') return { columns: ['id'], descending };
  return undefined;
}

/** The SELECT list giving a row's key: its time in UTC to the microsecond, and its id. */
export const KEY_COLUMNS = `to_char(r.last_updated AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS key_time, r.id AS key_id`;

/** The cursor naming a row's key (from KEY_COLUMNS). */
export function encodeCursor(keyset: Keyset, row: { key_time: string; key_id: string }): string {
  const values = keyset.columns.map((c) => (c === 'id' ? row.key_id : row.key_time));
  return Buffer.from(JSON.stringify(values)).toString('base64url');
}

/**
 * The condition "after the cursor's row in keyset order"; 400 for a cursor this search did not
 * make. `alias`: the row whose key columns are compared (an index row that carries them too).
 */
export function afterCursorSql(p: SqlParams, keyset: Keyset, cursor: string, alias = 'r'): string {
  let values: unknown;
  try {
    values = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    values = undefined;
  }
  const valid =
    Array.isArray(values) &&
    values.length === keyset.columns.length &&
    values.every((v, i) => typeof v === 'string' && (keyset.columns[i] === 'id' ? /^[A-Za-z0-9\-.]{1,64}$/.test(v) : /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/.test(v)));
  if (!valid) throw badRequest(`Invalid value '${cursor.slice(0, 100)}' for _cursor (a next link's cursor, for the same _sort)`);
  const strings = values as string[];
  const columns = keyset.columns.map((c) => `${alias}.${c}`).join(', ');
  const bound = keyset.columns.map((c, i) => (c === 'id' ? p.add(strings[i]) : `${p.add(strings[i])}::timestamptz`)).join(', ');
  return `(${columns}) ${keyset.descending ? '<' : '>'} (${bound})`;
}
