import type { Queryable } from '../../../core/database.js';
import type { ExportPageQuery, ResourceRepository } from '../../../core/repository.js';
import type { SearchTerminology } from '../../../core/search.js';
import type { Scope } from '../../../core/scope.js';
import { badRequest } from '../../../fhir/outcome.js';
import { accessSql } from './access.js';
import { compartmentsSql } from './compartment.js';
import { CONTROL_PARAMETERS } from './controls.js';
import { filterSql, splitModifier } from './filters.js';
import { checkSearchLimits, type SearchLimits } from './limits.js';
import { SqlParams } from './sql-params.js';
import { resolveTermCriteria, termCriteria } from './terminology.js';

/** A row of an export page: the resource's id and its version as of the transaction time (null: none then). */
interface ExportRow {
  id: string;
  content: string | null;
  last_updated: string | Date | null;
}

/**
 * One page of a bulk export (docs/export.md#consistency) as ONE statement over `resource r`,
 * in `id` order (the primary key's) after the keyset: the type, the caller's project only (shared content is not
 * the project's data), not deleted, the caller's access rights for search, the Patient
 * compartment and the `_typeFilter` searches (the same SQL as a search: filters.ts). Each row's
 * content is its current version when that is not newer than `asOf`, else the newest version of
 * `resource_history` at `asOf` (none: the resource did not exist yet, or was deleted then).
 * Rows are read `count` at a time; the resources of the page are those with a version then.
 */
export async function exportPage(
  q: Queryable,
  scope: Scope,
  query: ExportPageQuery,
  limits: SearchLimits,
  engines: { terminology?: SearchTerminology; repo?: ResourceRepository },
): Promise<{ rows: Array<{ id: string; content: string }>; last?: string; done: boolean }> {
  const type = query.resourceType;
  const p = new SqlParams(scope, accessSql);
  const filters = query.filters ?? [];
  for (const filter of filters) {
    checkSearchLimits(filter, limits);
    const control = filter.find(([name]) => CONTROL_PARAMETERS.has(splitModifier(name)[0]));
    if (control) throw badRequest(`_typeFilter ${type}: ${control[0]} is not a search filter`);
  }
  const criteria = filters.flatMap((filter) => termCriteria(type, filter));
  if (criteria.length > 0) p.terms = await resolveTermCriteria(q, criteria, limits.maxCodes, engines.terminology, engines.repo);
  const asOf = p.add(query.asOf);
  const where = [`r.resource_type = ${p.add(type)}`, 'NOT r.deleted', 'r.version_id > 0', `r.project_id = ${p.add(scope.auth.projectId ?? null)}`, p.visibility('r', 's', type)];
  if (query.after !== undefined) where.push(`r.id > ${p.add(query.after)}`);
  // A resource whose current version is not after `since` has no version after it as of `asOf`.
  if (query.since !== undefined) where.push(`r.last_updated > ${p.add(query.since)}::timestamptz`);
  if (query.patients !== undefined) where.push(compartmentsSql(p, 'r', [type], 'Patient', query.patients === 'any' ? undefined : query.patients));
  if (filters.length > 0) {
    const alternatives = filters.map((filter) => {
      const parts = filter.map(([name, value]) => filterSql(p, { alias: 'r', type }, name, value)).filter((sql): sql is string => sql !== undefined);
      return parts.length > 0 ? `(${parts.join(' AND ')})` : 'true';
    });
    where.push(`(${alternatives.join(' OR ')})`);
  }
  const older = `(SELECT %s FROM resource_history h WHERE h.resource_type = r.resource_type AND h.id = r.id AND h.last_updated <= ${asOf}::timestamptz ORDER BY h.version_id DESC LIMIT 1)`;
  const res = await q.query<ExportRow>(
    `SELECT r.id,
       CASE WHEN r.last_updated <= ${asOf}::timestamptz THEN r.content ELSE ${older.replace('%s', 'CASE WHEN h.deleted THEN NULL ELSE h.content END')} END AS content,
       CASE WHEN r.last_updated <= ${asOf}::timestamptz THEN r.last_updated ELSE ${older.replace('%s', 'h.last_updated')} END AS last_updated
     FROM resource r WHERE ${where.join(' AND ')}
     ORDER BY r.id LIMIT ${query.count}`,
    p.values,
  );
  const since = query.since !== undefined ? Date.parse(query.since) : undefined;
  const rows = res.rows
    .filter((row) => row.content !== null && (since === undefined || (row.last_updated !== null && new Date(row.last_updated).getTime() > since)))
    .map((row) => ({ id: row.id, content: row.content as string }));
  return { rows, last: res.rows.at(-1)?.id, done: res.rows.length < query.count };
}
