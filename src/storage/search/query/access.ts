import type { Queryable } from '../../../core/database.js';
import type { AccessGrant, Interaction, Scope } from '../../../core/scope.js';
import { FhirError } from '../../../fhir/outcome.js';
import { PUBLIC_TYPES } from '../../scope.js';
import { compartmentSql, compartmentTypes } from './compartment.js';
import { filterSql } from './filters.js';
import { SqlParams } from './sql-params.js';

/**
 * The SQL of the caller's access rights (storage/scope.ts `accessLayers`, docs/auth.md#scopes and
 * docs/auth.md#access-policies) for the `resource` (or `resource_history`) row under `alias`:
 * public types pass for reads and searches; any other row must, in every layer, meet one grant
 * of its type — its compartment (the Patient compartment's reference index) and its criteria
 * (the same SQL as a search with those parameters). `type`, when the caller knows the row's
 * type, keeps the condition small. Undefined when the caller has no access rights to apply.
 * A search page, a read, an include, a history page and a written row all use it, so they
 * cannot disagree.
 */
export function accessSql(p: SqlParams, scope: Scope, alias: string, interaction: Interaction, type?: string): string | undefined {
  const layers = scope.accessLayers(interaction);
  if (!layers) return undefined;
  const publicRead = interaction === 'r' || interaction === 's';
  if (publicRead && type !== undefined && PUBLIC_TYPES.includes(type)) return undefined;
  const parts = layers.map((layer) => `(${layerSql(p, layer, alias, type)})`);
  const all = parts.join(' AND ');
  if (!publicRead || type !== undefined) return all;
  return `(${alias}.resource_type = ANY(${p.add([...PUBLIC_TYPES])}::text[]) OR (${all}))`;
}

function layerSql(p: SqlParams, layer: AccessGrant[], alias: string, type: string | undefined): string {
  const branches: string[] = [];
  for (const grant of layer) {
    if (type !== undefined && grant.resourceType !== '*' && grant.resourceType !== type) continue;
    const branch = grantSql(p, grant, alias, type);
    if (branch === 'true') return 'true';
    if (branch !== 'false') branches.push(`(${branch})`);
  }
  return branches.length > 0 ? branches.join(' OR ') : 'false';
}

function grantSql(p: SqlParams, grant: AccessGrant, alias: string, type: string | undefined): string {
  const conditions: string[] = [];
  if (type === undefined && grant.resourceType !== '*') conditions.push(`${alias}.resource_type = ${p.add(grant.resourceType)}`);
  if (grant.compartment !== undefined) {
    const types = type !== undefined ? [type] : grant.resourceType !== '*' ? [grant.resourceType] : compartmentTypes();
    const sql = compartmentSql(p, alias, types, { resourceType: 'Patient', id: grant.compartment });
    if (sql === 'false') return 'false';
    conditions.push(sql);
  }
  if (grant.criteria !== undefined) {
    if (grant.resourceType === '*') return 'false';
    for (const [name, value] of grant.criteria) {
      let sql: string | undefined;
      try {
        sql = p.withoutAccess(() => filterSql(p, { alias, type: grant.resourceType }, name, value));
      } catch (err) {
        // Criteria the search cannot run (an unknown parameter, a bad value) accept no row.
        if (err instanceof FhirError) return 'false';
        throw err;
      }
      if (sql !== undefined) conditions.push(sql);
    }
  }
  return conditions.length > 0 ? conditions.join(' AND ') : 'true';
}

/**
 * True when the stored row `type/id` passes the caller's access rights for `interaction`
 * (a read's, a write's or a delete's row check; run in the write's transaction for a new version,
 * whose search index is already written). True without a query when there are no rights to apply.
 */
export async function rowPasses(q: Queryable, scope: Scope, type: string, id: string, interaction: Interaction): Promise<boolean> {
  const p = new SqlParams(scope);
  const where = [`r.resource_type = ${p.add(type)}`, `r.id = ${p.add(id)}`];
  const access = accessSql(p, scope, 'r', interaction, type);
  if (access === undefined) return true;
  where.push(access);
  const res = await q.query(`SELECT 1 AS ok FROM resource r WHERE ${where.join(' AND ')}`, p.values);
  return res.rows.length > 0;
}

/**
 * True when the caller's rights to `type` for `interaction` do not depend on the row: no rights
 * to apply, a public type read, or in every layer a grant of the type (or `*`) without a
 * compartment or criteria. A deleted row's content is no longer indexed, so whether it was
 * within a row-dependent right cannot be checked: for such a caller it is absent (404), never
 * 410 — which would tell that the id existed (docs/auth.md#access-policies).
 */
export function rowIndependent(scope: Scope, type: string, interaction: Interaction): boolean {
  const layers = scope.accessLayers(interaction);
  if (!layers) return true;
  if ((interaction === 'r' || interaction === 's') && PUBLIC_TYPES.includes(type)) return true;
  return layers.every((layer) => layer.some((g) => (g.resourceType === '*' || g.resourceType === type) && g.compartment === undefined && g.criteria === undefined));
}
