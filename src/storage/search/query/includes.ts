import type { Resource } from '@medplum/fhirtypes';
import { badRequest } from '../../../fhir/outcome.js';
import { isResourceType } from '../../../fhir/definitions.js';
import type { Queryable } from '../../../core/database.js';
import type { Scope } from '../../../core/scope.js';
import { searchParameter } from '../parameters.js';
import { tooManyIncluded } from './limits.js';
import { SqlParams } from './sql-params.js';
import { accessSql } from './access.js';
/** Rounds of `:iterate` after the first (guards against long reference chains). */
const MAX_ITERATIONS = 4;

interface Directive {
  reverse: boolean;
  iterate: boolean;
  source: string;
  param: string;
  target: string | undefined;
}

/**
 * Parses `_include=Source:param[:Target]` and `_revinclude=…` values (`:iterate` allowed).
 * Without `:iterate`, an `_include` source must be the searched type.
 */
export function parseDirectives(type: string, params: Array<[string, string]>): Directive[] {
  const out: Directive[] = [];
  for (const [name, value] of params) {
    const [base, modifier] = name.split(':');
    if ((base !== '_include' && base !== '_revinclude') || value === '') continue;
    if (modifier !== undefined && modifier !== 'iterate') throw badRequest(`Unsupported modifier ':${modifier}' for ${base}`);
    if (value === '*' && base === '_include') {
      // Every reference of every match (docs/rest.md#chaining-and-includes).
      out.push({ reverse: false, iterate: modifier === 'iterate', source: '*', param: '*', target: undefined });
      continue;
    }
    const [source, param, target, extra] = value.split(':');
    const invalid = (): Error => badRequest(`Invalid ${base} value '${value}'`);
    if (!source || !param || extra !== undefined || !isResourceType(source)) throw invalid();
    if (target !== undefined && !isResourceType(target)) throw invalid();
    if (base === '_include' && modifier === undefined && source !== type) throw invalid();
    const sp = searchParameter(source, param);
    if (!sp) throw badRequest(`Unknown search parameter: ${param}`);
    if (sp.type !== 'reference') throw badRequest(`Search parameter ${param} is not a reference and cannot be used in ${base}`);
    out.push({ reverse: base === '_revinclude', iterate: modifier === 'iterate', source, param, target });
  }
  return out;
}

/**
 * The resources the directives add to a page of `matches`: referenced ones (`_include`) and
 * referencing ones (`_revinclude`), visible to the caller and not deleted, each once and
 * never a resource that is already a match. More than `maxIncluded` of them in all is a 400
 * `too-costly` (docs/rest.md#limits), never a silently cut page.
 */
export async function loadIncluded(
  q: Queryable,
  scope: Scope,
  directives: Directive[],
  matches: Resource[],
  maxIncluded: number,
  /** Rows that are matches on some page of the search (SQL about the alias given), never included. */
  exclude?: (p: SqlParams, alias: string) => string,
): Promise<Resource[]> {
  const seen = new Set(matches.map(key));
  const included: Resource[] = [];
  let base = matches;
  for (let round = 0; round <= MAX_ITERATIONS && base.length > 0; round++) {
    const found: Resource[] = [];
    for (const d of directives) {
      if (round > 0 && !d.iterate) continue;
      // Rows already seen are skipped; one more than the room left tells "too many" apart
      // from "exactly enough".
      const room = maxIncluded - included.length - found.length;
      for (const resource of await runDirective(q, scope, d, base, room + seen.size + 1, exclude)) {
        if (seen.has(key(resource))) continue;
        seen.add(key(resource));
        found.push(resource);
        if (included.length + found.length > maxIncluded) throw tooManyIncluded(maxIncluded);
      }
    }
    included.push(...found);
    base = found;
  }
  return included;
}

async function runDirective(
  q: Queryable,
  scope: Scope,
  d: Directive,
  base: Resource[],
  limit: number,
  exclude?: (p: SqlParams, alias: string) => string,
): Promise<Resource[]> {
  const p = new SqlParams(scope, accessSql);
  let sql: string;
  if (!d.reverse && d.source === '*') {
    sql =
      `SELECT DISTINCT ON (t.resource_type, t.id) t.content FROM search_reference x JOIN resource t ON t.resource_type = x.target_type AND t.id = x.target_id` +
      ` WHERE (x.resource_type, x.id) IN (SELECT * FROM unnest(${p.add(base.map((r) => r.resourceType))}::text[], ${p.add(base.map((r) => r.id))}::text[]))`;
  } else if (!d.reverse) {
    const ids = base.filter((r) => r.resourceType === d.source).map((r) => r.id as string);
    if (ids.length === 0) return [];
    sql =
      `SELECT DISTINCT ON (t.resource_type, t.id) t.content FROM search_reference x JOIN resource t ON t.resource_type = x.target_type AND t.id = x.target_id` +
      ` WHERE x.resource_type = ${p.add(d.source)} AND x.id = ANY(${p.add(ids)}::text[]) AND x.param = ${p.add(d.param)}` +
      (d.target ? ` AND x.target_type = ${p.add(d.target)}` : '');
  } else {
    const targets = base.filter((r) => d.target === undefined || r.resourceType === d.target);
    if (targets.length === 0) return [];
    sql =
      `SELECT DISTINCT ON (t.resource_type, t.id) t.content FROM search_reference x JOIN resource t ON t.resource_type = x.resource_type AND t.id = x.id` +
      ` WHERE x.resource_type = ${p.add(d.source)} AND x.param = ${p.add(d.param)}` +
      ` AND (x.target_type, x.target_id) IN (SELECT * FROM unnest(${p.add(targets.map((r) => r.resourceType))}::text[], ${p.add(targets.map((r) => r.id))}::text[]))`;
  }
  if (exclude) sql += ` AND NOT ${exclude(p, 't')}`;
  sql += ` AND NOT t.deleted AND ${p.visibility('t')} ORDER BY t.resource_type, t.id LIMIT ${Math.max(1, limit)}`;
  const rows = await q.query<{ content: string }>(sql, p.values);
  return rows.rows.map((row) => JSON.parse(row.content) as Resource);
}

function key(r: Resource): string {
  return `${r.resourceType}/${r.id}`;
}
