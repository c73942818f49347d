import { COMPARTMENT_CANONICALS, compartmentMemberTypes, compartmentParams, type CompartmentType } from '../../../fhir/compartments.js';
import type { SearchQuery } from '../../../core/repository.js';
import type { SqlParams } from './sql-params.js';

/** The compartment of a search (SearchQuery.compartment). */
export type Compartment = NonNullable<SearchQuery['compartment']>;

/** CompartmentDefinition canonicals of the compartments search supports (docs/rest.md#compartment-search). */
export const COMPARTMENT_DEFINITIONS = COMPARTMENT_CANONICALS;

/**
 * Resource types of a compartment (docs/rest.md#compartment-search): its own type and every
 * type the R4 CompartmentDefinition gives parameters for. Patient unless said otherwise.
 */
export function compartmentTypes(compartment: CompartmentType = 'Patient'): string[] {
  return compartmentMemberTypes(compartment);
}

/**
 * The condition "the `resource` row under `alias` (of one of `types`) is in the compartment":
 * it is the compartment's own resource, or its search index holds a reference to it under one
 * of the CompartmentDefinition's parameters for its type. The semijoin is driven by the
 * reference index (resource_type, param, target_id).
 */
export function compartmentSql(p: SqlParams, alias: string, types: string[], compartment: Compartment): string {
  return compartmentsSql(p, alias, types, compartment.resourceType, [compartment.id]);
}

/**
 * `compartmentSql` for several compartments of one kind at once: the row is in the compartment
 * of one of `ids` — or, with `ids` undefined, of any resource of that type (a Patient-level bulk
 * export, docs/export.md#what-an-export-contains).
 */
export function compartmentsSql(p: SqlParams, alias: string, types: string[], compartmentType: Compartment['resourceType'], ids: string[] | undefined): string {
  const params = compartmentParams(compartmentType);
  const pairs = types.flatMap((type) => (params.get(type) ?? []).map((param) => `${type}.${param}`));
  const idIs = (column: string) => (ids === undefined ? 'true' : ids.length === 1 ? `${column} = ${p.add(ids[0])}` : `${column} = ANY(${p.add(ids)}::text[])`);
  const branches: string[] = [];
  if (types.includes(compartmentType)) {
    branches.push(`(${alias}.resource_type = ${p.add(compartmentType)} AND ${idIs(`${alias}.id`)})`);
  }
  if (pairs.length > 0 && ids === undefined) {
    // Any compartment of the type: a correlated probe of the row's own references (the owner
    // index), so a page of rows costs a page of probes — never a pass over every reference.
    const x = p.alias('cx');
    branches.push(
      `EXISTS (SELECT 1 FROM search_reference ${x} WHERE ${x}.resource_type = ${alias}.resource_type AND ${x}.id = ${alias}.id` +
        ` AND ${x}.target_type = ${p.add(compartmentType)} AND (${x}.resource_type || '.' || ${x}.param) = ANY(${p.add(pairs)}::text[]))`,
    );
  } else if (pairs.length > 0) {
    const x = p.alias('cx');
    branches.push(
      `(${alias}.resource_type, ${alias}.id) IN (SELECT ${x}.resource_type, ${x}.id FROM search_reference ${x}` +
        ` WHERE ${x}.resource_type = ANY(${p.add([...new Set(pairs.map((pair) => pair.split('.')[0]))])}::text[])` +
        ` AND ${x}.param = ANY(${p.add([...new Set(pairs.map((pair) => pair.split('.')[1]))])}::text[])` +
        ` AND ${idIs(`${x}.target_id`)} AND ${x}.target_type = ${p.add(compartmentType)}` +
        ` AND (${x}.resource_type || '.' || ${x}.param) = ANY(${p.add(pairs)}::text[]))`,
    );
  }
  return branches.length > 0 ? `(${branches.join(' OR ')})` : 'false';
}
