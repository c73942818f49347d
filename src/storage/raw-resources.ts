import type { Resource } from '@medplum/fhirtypes';
import type { Queryable } from '../core/database.js';
import { ownedBy, resourceTable } from './scope.js';

/**
 * Current stored resources read past the repository, for features that work inside their own
 * transaction (invite, password changes, login, first start): the content is unredacted (an
 * update must keep `User.passwordHash`), read on the caller's `tx` (never the read cache), and
 * project conditions come from the tenancy rule (scope.ts). Only live versions: not deleted,
 * not a reserved id (version 0).
 */

const LIVE = 'NOT r.deleted AND r.version_id > 0';

/** The current content of a live resource, unredacted. */
export async function readRaw<T extends Resource>(q: Queryable, resourceType: string, id: string): Promise<T | undefined> {
  const res = await q.query<{ content: string }>(`SELECT r.content FROM resource r WHERE r.resource_type = $1 AND r.id = $2 AND ${LIVE}`, [
    resourceType,
    id,
  ]);
  return parse<T>(res.rows[0]);
}

/** Like readRaw, but only when the resource belongs to `projectId`. */
export async function readRawInProject<T extends Resource>(q: Queryable, resourceType: string, id: string, projectId: string): Promise<T | undefined> {
  const inProject = ownedBy(resourceTable('r'), projectId, 3);
  const res = await q.query<{ content: string }>(
    `SELECT r.content FROM resource r WHERE r.resource_type = $1 AND r.id = $2 AND ${inProject.sql} AND ${LIVE}`,
    [resourceType, id, ...inProject.params],
  );
  return parse<T>(res.rows[0]);
}

/**
 * A page of the live resources of one type in a project (no shared content), ordered by id, and
 * how many there are in all.
 */
export async function listRawInProject<T extends Resource>(
  q: Queryable,
  resourceType: string,
  projectId: string,
  page: { count: number; offset: number },
): Promise<{ resources: T[]; total: number }> {
  const inProject = ownedBy(resourceTable('r'), projectId, 2);
  const where = `r.resource_type = $1 AND ${inProject.sql} AND ${LIVE}`;
  const params = [resourceType, ...inProject.params];
  const total = (await q.query<{ n: number }>(`SELECT count(*)::int AS n FROM resource r WHERE ${where}`, params)).rows[0]?.n ?? 0;
  const rows = (
    await q.query<{ content: string }>(`SELECT r.content FROM resource r WHERE ${where} ORDER BY r.id LIMIT ${page.count} OFFSET ${page.offset}`, params)
  ).rows;
  return { resources: rows.map((row) => JSON.parse(row.content) as T), total };
}

/** The current, live version, unredacted, locked (FOR UPDATE) for the rest of `tx`. */
export async function lockRaw(tx: Queryable, resourceType: string, id: string): Promise<{ resource: Resource; version: number } | undefined> {
  const res = await tx.query<{ content: string; version_id: number }>(
    `SELECT r.content, r.version_id FROM resource r WHERE r.resource_type = $1 AND r.id = $2 AND ${LIVE} FOR UPDATE`,
    [resourceType, id],
  );
  const row = res.rows[0];
  return row ? { resource: JSON.parse(row.content) as Resource, version: row.version_id } : undefined;
}

/**
 * The oldest resource of a type in a project with this e-mail (compared lower-cased and
 * trimmed) among its telecoms: a scan of the project's resources of that type, for resources
 * that carry no indexed claim, inside the caller's transaction.
 */
export async function findRawByTelecomEmail(q: Queryable, projectId: string, resourceType: string, email: string): Promise<Resource | undefined> {
  const inProject = ownedBy(resourceTable('r'), projectId, 2);
  const res = await q.query<{ content: string }>(
    `SELECT r.content FROM resource r
     WHERE r.resource_type = $1 AND ${inProject.sql} AND ${LIVE}
       AND EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(r.content::jsonb->'telecom') = 'array'
                                                        THEN r.content::jsonb->'telecom' ELSE '[]'::jsonb END) t
                   WHERE t->>'system' = 'email' AND lower(trim(t->>'value')) = $3)
     ORDER BY r.last_updated, r.id LIMIT 1`,
    [resourceType, ...inProject.params, email],
  );
  return parse<Resource>(res.rows[0]);
}

/**
 * The id of the super-admin Project: the live Project `preferredId` when there is one, else the
 * oldest live Project whose content says `superAdmin: true`.
 */
export async function findSuperAdminProjectId(q: Queryable, preferredId: string): Promise<string | undefined> {
  const res = await q.query<{ id: string }>(
    `SELECT r.id FROM resource r WHERE r.resource_type = 'Project' AND ${LIVE}
       AND (r.id = $1 OR (r.content::jsonb ->> 'superAdmin') = 'true') ORDER BY r.id = $1 DESC, r.last_updated LIMIT 1`,
    [preferredId],
  );
  return res.rows[0]?.id;
}

function parse<T>(row: { content: string } | undefined): T | undefined {
  return row ? (JSON.parse(row.content) as T) : undefined;
}
