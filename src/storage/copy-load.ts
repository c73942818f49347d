import type { Resource } from '@medplum/fhirtypes';
import type { Queryable } from '../core/database.js';
import { emptyRows, type IndexRows } from './search/index-rows.js';
import { COPY_INDEX_TABLES, copyColumns, indexCopyText, manyIndexCtes } from './search/index-writer.js';

/**
 * The first versions of new resources written with COPY (a bulk load, docs/rest.md#bulk-load):
 * one `COPY … FROM` each for `resource`, `resource_history` and every search-index table that
 * has rows, in the caller's transaction — so the batch is still stored whole or not at all.
 * The rows travel in COPY's text format, read by the server's COPY parser; no array parameters
 * to build, send and unnest, and the server inserts them in multi-row groups. Search-text rows
 * (`search_text`: a tsvector the database computes) keep their INSERT statement.
 *
 * The text of each resource is made apart from the write (`copyReady`): a bulk load makes it in
 * its worker threads (storage/bulk-prepare), and this thread only joins and sends it.
 */
/** One new resource ready to COPY: its stored JSON and its index rows as COPY text. */
export interface CopyReady {
  resourceType: string;
  id: string;
  /** The stored JSON (with its meta). */
  content: string;
  /** Per table of COPY_TABLES: this resource's lines, `''` for none. */
  copy: string[];
  /** Its `_text`/`_content` rows (the database computes their tsvector). */
  text: IndexRows['text'];
}

type CopyQueryable = Queryable & { copyRows: NonNullable<Queryable['copyRows']> };

const RESOURCE_COLUMNS = ['resource_type', 'id', 'version_id', 'project_id', 'last_updated', 'deleted', 'content'];

/** The `search_*` tables COPY writes, in order. */
export const COPY_TABLES = COPY_INDEX_TABLES.map((table) => `search_${table}`);
/** Per table of COPY_TABLES: its COPY columns (as indexCopyText names them). */
const COPY_COLUMNS = COPY_INDEX_TABLES.map(copyColumns);

/** Whether `tx` can COPY (both drivers' transactions can; a wrapper may not). */
export function canCopy(tx: Queryable): tx is CopyQueryable {
  return typeof tx.copyRows === 'function';
}

/** A new resource ready to COPY from its stored JSON and index rows (made in this thread). */
export function copyReadyOf(resource: Resource, content: string, rows: IndexRows): CopyReady {
  const id = resource.id as string;
  return { resourceType: resource.resourceType, id, content, copy: copyLines(resource.resourceType, id, resource.meta?.lastUpdated, rows), text: rows.text };
}

/** Writes resources new to the database (resource, history and index rows) in `tx`, in one COPY per table. */
export async function copyReady(tx: CopyQueryable, resources: CopyReady[], projectId: string | undefined, now: string): Promise<void> {
  if (resources.length === 0) return;
  const tail = `\t1\t${copyField(projectId ?? null)}\t${copyField(now)}\tf\t`;
  const lines: string[] = [];
  for (const r of resources) lines.push(`${copyField(r.resourceType)}\t${copyField(r.id)}${tail}${copyField(r.content)}\n`);
  const text = lines.join('');
  // The same lines are the current version and the first history version.
  await tx.copyRows('resource', RESOURCE_COLUMNS, text);
  await tx.copyRows('resource_history', RESOURCE_COLUMNS, text);
  for (let t = 0; t < COPY_TABLES.length; t++) {
    const table = COPY_TABLES[t];
    const parts: string[] = [];
    for (const r of resources) if (r.copy[t]) parts.push(r.copy[t]);
    if (parts.length > 0) await tx.copyRows(table, COPY_COLUMNS[t], parts.join(''));
  }
  const params: unknown[] = [];
  const texts = manyIndexCtes(
    resources.filter((r) => r.text.length > 0).map((r) => ({ resourceType: r.resourceType, id: r.id, lastUpdated: now, rows: { ...emptyRows(), text: r.text } })),
    params,
  );
  if (texts.length > 0) await tx.query(`WITH ${texts.join(', ')} SELECT 1`, params);
}

/**
 * One resource's index rows as COPY text: one entry per table of COPY_TABLES, `''` where it has
 * none; `lastUpdated` is its first version's, which the stamped tables' rows carry.
 */
export function copyLines(resourceType: string, id: string, lastUpdated: string | undefined, rows: IndexRows): string[] {
  const out = COPY_TABLES.map(() => '');
  for (const t of indexCopyText([{ resourceType, id, lastUpdated, rows }], copyField)) out[COPY_TABLES.indexOf(t.table)] = t.text;
  return out;
}

/** Characters that COPY's text format writes as backslash escapes (tested first: most values have none). */
const NEEDS_ESCAPE = /[\\\t\n\r]/;
const ESCAPE = /[\\\t\n\r]/g;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** One value as a field of a COPY text line: `\N` is NULL, booleans `t`/`f`, strings escaped. */
export function copyField(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return NEEDS_ESCAPE.test(value) ? value.replace(ESCAPE, (c) => ESCAPES[c]) : value;
    case 'boolean':
      return value ? 't' : 'f';
    case 'number':
    case 'bigint':
      return String(value);
    default:
      return value === null || value === undefined ? '\\N' : copyField(JSON.stringify(value));
  }
}
