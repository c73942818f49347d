import type { Resource } from '@medplum/fhirtypes';
import type { Queryable } from '../core/database.js';
import { FhirError, badRequest, issue } from '../fhir/outcome.js';
import { isObject } from '../fhir/json.js';

/**
 * `Project.checkReferencesOnWrite` (docs/rest.md#referential-integrity): in a project that sets
 * it, a create or update whose relative literal references (`Type/id`, `Type/id/_history/v`)
 * name no live resource the project can see is refused (400), and so is the delete of a
 * resource another live resource of the project references (409). Without it, FHIR's own rule:
 * references are not checked.
 */

/** A relative literal reference (FHIR R4 references.html#literal). */
const RELATIVE_REFERENCE = /^([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[A-Za-z0-9\-.]{1,64})?$/;

/** Whether the project checks references: the Project row's flag, read in the same statement as the check. */
const PROJECT_CHECKS = `coalesce((SELECT (p.content::jsonb ->> 'checkReferencesOnWrite') = 'true' FROM resource p
  WHERE p.resource_type = 'Project' AND p.id = $1 AND NOT p.deleted AND p.version_id > 0), false)`;

interface FoundReference {
  type: string;
  id: string;
  reference: string;
  /** FHIRPath-like location, e.g. `Observation.subject` or `Observation.performer[1]`. */
  path: string;
}

/** The relative literal references of a resource (contained resources included), in document order. */
export function literalReferences(resource: Resource): FoundReference[] {
  const found: FoundReference[] = [];
  const walk = (value: unknown, path: string): void => {
    if (Array.isArray(value)) {
      value.forEach((v, i) => walk(v, `${path}[${i}]`));
      return;
    }
    if (!isObject(value)) return;
    for (const [key, v] of Object.entries(value)) {
      if (key === 'reference' && typeof v === 'string') {
        const m = RELATIVE_REFERENCE.exec(v);
        if (m) found.push({ type: m[1], id: m[2], reference: v, path });
      } else walk(v, `${path}.${key}`);
    }
  };
  for (const [key, v] of Object.entries(resource)) if (key !== 'meta') walk(v, `${resource.resourceType}.${key}`);
  return found;
}

/**
 * Refuses (400, naming the reference and its element) a write of `resource` into `projectId`
 * when the project checks references and one points nowhere. `pending`: `Type/id` keys written
 * by the same transaction but not yet stored (held creates). No statement when the resource
 * holds no relative literal reference, nor when `known` (a transaction's memory of the
 * projects' flags, filled here) says the project does not check.
 */
export async function checkReferencesExist(
  q: Queryable,
  resource: Resource,
  projectId: string | undefined,
  pending: ReadonlySet<string>,
  known?: Map<string, boolean>,
): Promise<void> {
  if (projectId === undefined || known?.get(projectId) === false) return;
  const self = `${resource.resourceType}/${resource.id}`;
  const refs = literalReferences(resource).filter((r) => `${r.type}/${r.id}` !== self && !pending.has(`${r.type}/${r.id}`));
  if (refs.length === 0) return;
  // One row: the project's flag, and (when it checks) the first reference that names nothing.
  const found = await q.query<{ checks: boolean; n: number | null }>(
    `SELECT ${PROJECT_CHECKS} AS checks, (SELECT u.n::int FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS u(t, i, n)
     WHERE ${PROJECT_CHECKS} AND NOT EXISTS (SELECT 1 FROM resource r WHERE r.resource_type = u.t AND r.id = u.i
       AND NOT r.deleted AND r.version_id > 0 AND (r.project_id = $1 OR r.project_id IS NULL))
     ORDER BY u.n LIMIT 1) AS n`,
    [projectId, refs.map((r) => r.type), refs.map((r) => r.id)],
  );
  const row = found.rows[0];
  known?.set(projectId, row?.checks === true);
  if (row?.n === null || row?.n === undefined) return;
  const ref = refs[row.n - 1];
  throw badRequest(`Reference '${ref.reference}' at ${ref.path} points to no resource (the project checks references on write)`, ref.path);
}

/**
 * Refuses (409, naming one referrer) the delete of `Type/id` of `projectId` when the project
 * checks references and another live resource of the project references it through an indexed
 * reference element (every reference a search parameter covers).
 */
export async function checkNotReferenced(q: Queryable, resourceType: string, id: string, projectId: string | null): Promise<void> {
  if (projectId === null) return;
  const referrer = await q.query<{ resource_type: string; id: string; param: string }>(
    `SELECT s.resource_type, s.id, s.param FROM search_reference s JOIN resource r ON r.resource_type = s.resource_type AND r.id = s.id
     WHERE ${PROJECT_CHECKS} AND s.target_id = $3 AND s.target_type = $2 AND NOT (s.resource_type = $2 AND s.id = $3)
       AND NOT r.deleted AND r.version_id > 0 AND r.project_id = $1
     ORDER BY s.resource_type, s.id LIMIT 1`,
    [projectId, resourceType, id],
  );
  const row = referrer.rows[0];
  if (row === undefined) return;
  throw new FhirError(409, [
    issue('conflict', `${resourceType}/${id} is referenced by ${row.resource_type}/${row.id} (search parameter ${row.param}); the project checks references on write, so it cannot be deleted`),
  ]);
}
