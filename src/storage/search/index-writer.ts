import type { Queryable } from '../../core/database.js';
import { INDEX_TABLES, TABLE_COLUMNS, type IndexRows } from './index-rows.js';

/**
 * Replaces the index rows of one resource in ONE statement: a data-modifying CTE per table
 * deletes the old rows, another inserts the new ones. All parts see the same snapshot, so the
 * deletes never touch the rows being inserted. Values travel as one array per column,
 * expanded with `unnest`: no limit on the number of rows and a single round trip per write.
 */
export async function replaceRows(tx: Queryable, resourceType: string, id: string, rows: IndexRows): Promise<void> {
  const params: unknown[] = [resourceType, id];
  const parts = INDEX_TABLES.map((table) => `d_${table} AS (${deleteSql(table)})`);
  for (const table of INDEX_TABLES) {
    const list = rows[table] as Array<Record<string, unknown>>;
    if (list.length === 0) continue;
    const columns = TABLE_COLUMNS[table] as Array<[string, string]>;
    const arrays = columns.map(([column, type]) => {
      params.push(list.map((row) => row[column] ?? null));
      return `$${params.length}::${type}[]`;
    });
    if (table === 'text') {
      // The text becomes a tsvector here, with the configuration the query uses (conditions.ts).
      parts.push(`i_text AS (INSERT INTO search_text (resource_type, id, param, document) SELECT $1, $2, u.param, to_tsvector('english', u.body) FROM unnest(${arrays.join(', ')}) AS u(param, body))`);
      continue;
    }
    parts.push(
      `i_${table} AS (INSERT INTO search_${table} (resource_type, id, ${columns.map(([c]) => c).join(', ')}) ` +
        `SELECT $1, $2, * FROM unnest(${arrays.join(', ')}))`,
    );
  }
  await tx.query(`WITH ${parts.join(', ')} SELECT 1`, params);
}

/** Deletes every index row of one resource (when it is deleted), in one statement. */
export async function removeRows(tx: Queryable, resourceType: string, id: string): Promise<void> {
  const parts = INDEX_TABLES.map((table) => `d_${table} AS (${deleteSql(table)})`);
  await tx.query(`WITH ${parts.join(', ')} SELECT 1`, [resourceType, id]);
}

function deleteSql(table: string): string {
  return `DELETE FROM search_${table} WHERE resource_type = $1 AND id = $2`;
}
