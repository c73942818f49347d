import type { Resource } from '@medplum/fhirtypes';
import type { Queryable } from '../core/database.js';
import { emptyRows, type IndexRows } from './search/index-rows.js';
import { indexCopyText, manyIndexCtes } from './search/index-writer.js';

/**
 * The first versions of new resources written with COPY (a bulk load, docs/rest.md#bulk-load):
 * one `COPY … FROM` each for `resource`, `resource_history` and every search-index table that
 * has rows, in the caller's transaction — so the batch is still stored whole or not at all.
 * The rows travel in COPY's text format, read by the server's COPY parser; no array parameters
 * to build, send and unnest, and the server inserts them in multi-row groups. Search-text rows
 * (`search_text`: a tsvector the database computes) keep their INSERT statement.
 */
export interface NewVersions {
  resources: Resource[];
  /** The stored JSON of each resource (with its meta). */
  contents: string[];
  /** The index rows of each resource. */
  rows: IndexRows[];
  projectId: string | undefined;
  /** `last_updated` of them all. */
  now: string;
}

type CopyQueryable = Queryable & { copyRows: NonNullable<Queryable['copyRows']> };

const RESOURCE_COLUMNS = ['resource_type', 'id', 'version_id', 'project_id', 'last_updated', 'deleted', 'content'];

/** Whether `tx` can COPY (both drivers' transactions can; a wrapper may not). */
export function canCopy(tx: Queryable): tx is CopyQueryable {
  return typeof tx.copyRows === 'function';
}

/** Writes `batch` (resources new to the database) in `tx`: resource, history and index rows. */
export async function copyNew(tx: CopyQueryable, batch: NewVersions): Promise<void> {
  const { resources, contents, rows } = batch;
  const tail = `\t1\t${copyField(batch.projectId ?? null)}\t${copyField(batch.now)}\tf\t`;
  let text = '';
  resources.forEach((resource, i) => {
    text += `${copyField(resource.resourceType)}\t${copyField(resource.id)}${tail}${copyField(contents[i])}\n`;
  });
  // The same lines are the current version and the first history version.
  await tx.copyRows('resource', RESOURCE_COLUMNS, text);
  await tx.copyRows('resource_history', RESOURCE_COLUMNS, text);
  const owned = resources.map((resource, i) => ({ resourceType: resource.resourceType, id: resource.id as string, rows: rows[i] }));
  for (const table of indexCopyText(owned, copyField)) await tx.copyRows(table.table, table.columns, table.text);
  const params: unknown[] = [];
  const texts = manyIndexCtes(
    owned.map((o) => ({ ...o, rows: { ...emptyRows(), text: o.rows.text } })),
    params,
  );
  if (texts.length > 0) await tx.query(`WITH ${texts.join(', ')} SELECT 1`, params);
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
