import type { Queryable } from '../../core/database.js';
import { INDEX_TABLES, STAMPED_TABLES, TABLE_COLUMNS, type IndexRows } from './index-rows.js';

/**
 * Replaces the index rows of one resource in ONE statement: a data-modifying CTE per table
 * deletes the old rows, another inserts the new ones. All parts see the same snapshot, so the
 * deletes never touch the rows being inserted. Values travel as one array per column,
 * expanded with `unnest`: no limit on the number of rows and a single round trip per write.
 */
export async function replaceRows(tx: Queryable, resourceType: string, id: string, rows: IndexRows, lastUpdated: string | undefined): Promise<void> {
  const params: unknown[] = [resourceType, id];
  const parts = indexCtes(rows, params, { replace: true, lastUpdated });
  await tx.query(`WITH ${parts.join(', ')} SELECT 1`, params);
}

/**
 * The CTEs that write `rows` as part of a larger statement (the resource's own write,
 * repository.ts): `$1` and `$2` of `params` must be the resource type and id; the arrays are
 * appended to `params`. `replace`: delete the resource's old rows first (not needed for a new
 * id, which has none). `guard`: a CTE name; rows are written (and deleted) only when it
 * returned a row (a conditional write: nothing happens when it did not). `lastUpdated`: the
 * version's `meta.lastUpdated`, stored with the rows of STAMPED_TABLES.
 */
export function indexCtes(rows: IndexRows, params: unknown[], options: { replace: boolean; guard?: string; lastUpdated: string | undefined }): string[] {
  const when = options.guard ? ` AND EXISTS (SELECT 1 FROM ${options.guard})` : '';
  const parts = options.replace ? INDEX_TABLES.map((table) => `d_${table} AS (${deleteSql(table)}${when})`) : [];
  let stamp: string | undefined;
  for (const table of INDEX_TABLES) {
    const list = rows[table] as Array<Record<string, unknown>>;
    if (list.length === 0) continue;
    const columns = TABLE_COLUMNS[table] as Array<[string, string]>;
    const arrays = columns.map(([column, type]) => {
      params.push(list.map((row) => row[column] ?? null));
      return `$${params.length}::${type}[]`;
    });
    if (STAMPED_TABLES.has(table)) stamp ??= `$${params.push(options.lastUpdated ?? null)}::timestamptz`;
    parts.push(insertCte(table, arrays, { type: '$1', id: '$2', lastUpdated: stamp }, when ? ` WHERE${when.slice(4)}` : ''));
  }
  return parts;
}

/**
 * The CTEs that write the index rows of many new resources in one statement (a bulk load,
 * storage/bulk-load.ts): per table, one `unnest` of arrays that carry each row's resource
 * type, id and (STAMPED_TABLES) `meta.lastUpdated`. The arrays are appended to `params`.
 */
export function manyIndexCtes(resources: Array<{ resourceType: string; id: string; lastUpdated: string | undefined; rows: IndexRows }>, params: unknown[]): string[] {
  const parts: string[] = [];
  for (const table of INDEX_TABLES) {
    const columns = TABLE_COLUMNS[table] as Array<[string, string]>;
    const stamped = STAMPED_TABLES.has(table);
    const types: string[] = [];
    const ids: string[] = [];
    const stamps: Array<string | null> = [];
    const values: unknown[][] = columns.map(() => []);
    for (const { resourceType, id, lastUpdated, rows } of resources) {
      for (const row of rows[table] as Array<Record<string, unknown>>) {
        types.push(resourceType);
        ids.push(id);
        if (stamped) stamps.push(lastUpdated ?? null);
        columns.forEach(([column], i) => values[i].push(row[column] ?? null));
      }
    }
    if (types.length === 0) continue;
    const owner = stamped ? [types, ids, stamps] : [types, ids];
    params.push(...owner, ...values);
    const first = params.length - columns.length - owner.length + 1;
    const arrayTypes = [...(stamped ? ['text', 'text', 'timestamptz'] : ['text', 'text']), ...columns.map(([, type]) => type)];
    const arrays = arrayTypes.map((type, i) => `$${first + i}::${type}[]`);
    parts.push(insertCte(table, arrays, { type: 'u.resource_type', id: 'u.id', lastUpdated: stamped ? 'u.last_updated' : undefined }, ''));
  }
  return parts;
}

/**
 * The CTE that inserts one index table's rows from `unnest`ed arrays (one per column of
 * TABLE_COLUMNS, after the owner's arrays when `owner` names `u.` columns); `owner` is the SQL
 * of the resource type, the id and (STAMPED_TABLES) the version's `last_updated`, `where` an
 * optional condition. Every index write goes through here, so a table whose stored column is
 * computed from its values is handled once.
 */
function insertCte(table: keyof typeof TABLE_COLUMNS, arrays: string[], owner: { type: string; id: string; lastUpdated?: string }, where: string): string {
  const columns = (TABLE_COLUMNS[table] as Array<[string, string]>).map(([c]) => c);
  const stamped = owner.lastUpdated !== undefined && STAMPED_TABLES.has(table);
  const keys = [owner.type, owner.id, ...(stamped ? [owner.lastUpdated] : [])].join(', ');
  const ownerColumns = stamped ? ['resource_type', 'id', 'last_updated'] : ['resource_type', 'id'];
  const names = owner.id.startsWith('u.') ? [...ownerColumns, ...columns] : columns;
  if (table === 'text') {
    // The text becomes a tsvector here, with the configuration the query uses (conditions.ts).
    return (
      `i_text AS (INSERT INTO search_text (resource_type, id, param, document) ` +
      `SELECT ${keys}, u.param, to_tsvector('english', u.body) FROM unnest(${arrays.join(', ')}) AS u(${names.join(', ')})${where})`
    );
  }
  return (
    `i_${table} AS (INSERT INTO search_${table} (${[...ownerColumns, ...columns].join(', ')}) ` +
    `SELECT ${keys}, ${columns.map((c) => `u.${c}`).join(', ')} FROM unnest(${arrays.join(', ')}) AS u(${names.join(', ')})${where})`
  );
}

/** Deletes every index row of one resource (when it is deleted), in one statement. */
export async function removeRows(tx: Queryable, resourceType: string, id: string): Promise<void> {
  const parts = INDEX_TABLES.map((table) => `d_${table} AS (${deleteSql(table)})`);
  await tx.query(`WITH ${parts.join(', ')} SELECT 1`, [resourceType, id]);
}

function deleteSql(table: string): string {
  return `DELETE FROM search_${table} WHERE resource_type = $1 AND id = $2`;
}

/** The columns of `table` a COPY of its rows names: the owner's, then TABLE_COLUMNS'. */
export function copyColumns(table: keyof IndexRows): string[] {
  const owner = STAMPED_TABLES.has(table) ? ['resource_type', 'id', 'last_updated'] : ['resource_type', 'id'];
  return [...owner, ...(TABLE_COLUMNS[table] as Array<[string, string]>).map(([c]) => c)];
}

/** Index tables whose rows COPY can carry as they are (all but `text`: its tsvector is computed by the database). */
export const COPY_INDEX_TABLES = INDEX_TABLES.filter((table) => table !== 'text');

/**
 * The index rows of many new resources in COPY's text format, one text per table of
 * COPY_INDEX_TABLES that has rows (a bulk load, storage/copy-load.ts): each line is the
 * resource type, the id and TABLE_COLUMNS' values. `field` writes one value as a COPY field.
 * `text` rows are not among them: write those with `manyIndexCtes`.
 */
export function indexCopyText(
  resources: Array<{ resourceType: string; id: string; lastUpdated: string | undefined; rows: IndexRows }>,
  field: (value: unknown) => string,
): Array<{ table: string; columns: string[]; text: string }> {
  const out: Array<{ table: string; columns: string[]; text: string }> = [];
  for (const table of COPY_INDEX_TABLES) {
    const columns = (TABLE_COLUMNS[table] as Array<[string, string]>).map(([c]) => c);
    const stamped = STAMPED_TABLES.has(table);
    let text = '';
    for (const { resourceType, id, lastUpdated, rows } of resources) {
      const list = rows[table] as Array<Record<string, unknown>>;
      if (list.length === 0) continue;
      const owner = `${field(resourceType)}\t${field(id)}${stamped ? `\t${field(lastUpdated ?? null)}` : ''}`;
      for (const row of list) {
        text += owner;
        for (const column of columns) text += `\t${field(row[column])}`;
        text += '\n';
      }
    }
    if (text.length > 0) out.push({ table: `search_${table}`, columns: copyColumns(table), text });
  }
  return out;
}
