import { SEARCH_NESTING_CEILING } from '../../../config.js';
import { FhirError, badRequest, issue } from '../../../fhir/outcome.js';
import { isResourceType } from '../../../fhir/definitions.js';
import { compositeComponents, searchParameter, tableFor } from '../parameters.js';
import {
  compositeSql,
  criterionSql,
  dateMatch,
  numberMatch,
  quantityMatch,
  referenceMatch,
  stringMatch,
  termSql,
  tokenMatch,
  uriMatch,
  type Owner,
} from './conditions.js';
import { parseFilter, type FilterNode } from './filter-expression.js';
import { FILTER_TERM_OPS, termKey } from './terminology.js';
import { parseDateRange } from '../../../fhir/date-range.js';
import { escapeLike, normalizeText } from '../normalize.js';
import type { SqlParams } from './sql-params.js';
import { splitValues, unescapeValue } from './values.js';

/** Standard parameters Lattice knows but does not implement: refused, never ignored. */
const NOT_SUPPORTED = new Set(['_query', '_list', '_type', '_contained', '_containedType']);

/** Full-text parameters (docs/rest.md#text-search), answered from `search_text`. */
export const TEXT_PARAMETERS: ReadonlySet<string> = new Set(['_text', '_content']);

/**
 * SQL for one query parameter (`name[:modifier][.chained…]=values`) about the `owner` row, or
 * undefined when the value is empty (an empty parameter is ignored, as FHIR allows).
 * Throws 400 for unknown parameters, modifiers and malformed values.
 */
export function filterSql(p: SqlParams, owner: Owner, name: string, rawValue: string): string | undefined {
  checkNesting(name);
  if (name.startsWith('_has:') || name === '_has') return hasSql(p, owner, name, rawValue);
  if (name === '_filter' || name.startsWith('_filter:')) {
    if (name !== '_filter') throw badRequest(`Unsupported modifier ':${name.slice(8)}' for search parameter _filter`);
    return rawValue.trim() === '' ? undefined : `(${filterTreeSql(p, owner, parseFilter(rawValue))})`;
  }
  const dot = name.indexOf('.');
  const head = dot >= 0 ? name.slice(0, dot) : name;
  const [code, modifier] = splitModifier(head);
  if (dot >= 0) return chainSql(p, owner, code, modifier, name.slice(dot + 1), rawValue);
  checkKnown(owner.type, code);
  const values = splitValues(rawValue).filter((v) => v.length > 0);
  if (values.length === 0) return undefined;

  if (code === '_id') {
    if (modifier !== undefined) throw badRequest(`Unsupported modifier ':${modifier}' for search parameter _id`);
    return `${owner.alias}.id = ANY(${p.add(values.map(unescapeValue))}::text[])`;
  }
  if (TEXT_PARAMETERS.has(code)) {
    if (modifier !== undefined) throw badRequest(`Unsupported modifier ':${modifier}' for search parameter ${code}`);
    const x = p.alias('x');
    const any = values.map((v) => `${x}.document @@ websearch_to_tsquery('english', ${p.add(unescapeValue(v))})`).join(' OR ');
    return (
      `EXISTS (SELECT 1 FROM search_text ${x} WHERE ${x}.resource_type = ${p.add(owner.type)} AND ${x}.id = ${owner.alias}.id` +
      ` AND ${x}.param = ${p.add(code)} AND (${any}))`
    );
  }
  if (code === '_lastUpdated') {
    if (modifier !== undefined) throw badRequest(`Unsupported modifier ':${modifier}' for search parameter _lastUpdated`);
    const low = `${owner.alias}.last_updated`;
    const high = `(${owner.alias}.last_updated + interval '1 millisecond')`;
    return values.map((v) => `(${dateMatch(p, low, high, code, v)})`).join(' OR ');
  }
  const sp = searchParameter(owner.type, code)!;
  const components = compositeComponents(sp);
  if (components) {
    if (modifier !== undefined) throw badRequest(`Unsupported modifier ':${modifier}' for search parameter ${code}`);
    return `(${values.map((v) => compositeSql(p, owner, code, components, v)).join(' OR ')})`;
  }
  const table = tableFor(sp)!;
  return `(${criterionSql(p, owner, { code, table, modifier, values })})`;
}

/**
 * Chains and `_has` are built by recursion, one level per link: a name deeper than
 * SEARCH_NESTING_CEILING is refused whoever wrote it (a search's own parameters meet the lower
 * configured bounds first, limits.ts; access-policy and scope criteria come here directly).
 */
function checkNesting(name: string): void {
  const links = name.split('.').length - 1;
  if (links > SEARCH_NESTING_CEILING) throw tooDeep(`Chained search parameter too deep: ${links} links (at most ${SEARCH_NESTING_CEILING})`);
  const has = name.split('_has:').length - 1;
  if (has > SEARCH_NESTING_CEILING) throw tooDeep(`_has nested too deep: ${has} levels (at most ${SEARCH_NESTING_CEILING})`);
}

const tooDeep = (text: string) => new FhirError(400, [issue('too-costly', text)]);

/** `name:exact` → ['name', 'exact']. */
export function splitModifier(name: string): [string, string | undefined] {
  const colon = name.indexOf(':');
  return colon >= 0 ? [name.slice(0, colon), name.slice(colon + 1)] : [name, undefined];
}

/** 400 unless `code` is a parameter of `type` that Lattice can search. */
export function checkKnown(type: string, code: string): void {
  if (NOT_SUPPORTED.has(code)) throw badRequest(`Search parameter ${code} is not supported`);
  if (code === '_id' || code === '_lastUpdated') return;
  const sp = searchParameter(type, code);
  if (TEXT_PARAMETERS.has(code) && sp) return;
  if (!sp) throw badRequest(`Unknown search parameter: ${code}`);
  if (sp.type === 'composite' && compositeComponents(sp)) return;
  if (!tableFor(sp) || !sp.expression) throw badRequest(`Search parameter ${code} is not supported`);
}

/**
 * `subject:Patient.name=Eve`: resources whose `subject` points at a visible, current resource
 * of a target type that matches `name=Eve`. Without a type modifier every target type of the
 * SearchParameter that has the chained parameter is tried.
 */
function chainSql(p: SqlParams, owner: Owner, code: string, modifier: string | undefined, rest: string, rawValue: string): string | undefined {
  checkKnown(owner.type, code);
  const sp = searchParameter(owner.type, code);
  if (!sp || sp.type !== 'reference') throw badRequest(`Search parameter ${code} is not a reference and cannot be chained`);
  if (modifier !== undefined && !isResourceType(modifier)) {
    throw badRequest(`Unsupported modifier ':${modifier}' for search parameter ${code}`);
  }
  const [restCode] = splitModifier(rest.split('.')[0]);
  const declared = modifier !== undefined ? [modifier] : ((sp.target ?? []) as string[]).filter(isResourceType);
  const targets = declared.filter((type) => {
    try {
      checkKnown(type, restCode);
      return true;
    } catch {
      return false;
    }
  });
  if (targets.length === 0) checkKnown(declared[0] ?? owner.type, restCode); // throws the precise 400
  if (targets.length === 0) throw badRequest(`Unknown search parameter: ${restCode}`);

  const x = p.alias('x');
  const t = p.alias('t');
  const branches: string[] = [];
  for (const type of targets) {
    const inner = filterSql(p, { alias: t, type }, rest, rawValue);
    if (inner === undefined) return undefined;
    branches.push(`(${t}.resource_type = ${p.add(type)} AND ${inner})`);
  }
  return (
    `EXISTS (SELECT 1 FROM search_reference ${x} JOIN resource ${t} ON ${t}.resource_type = ${x}.target_type AND ${t}.id = ${x}.target_id` +
    ` WHERE ${x}.resource_type = ${p.add(owner.type)} AND ${x}.id = ${owner.alias}.id AND ${x}.param = ${p.add(code)}` +
    ` AND NOT ${t}.deleted AND ${p.visibility(t)} AND (${branches.join(' OR ')}))`
  );
}

/**
 * `_has:<Type>:<reference parameter>:<parameter>=<value>` (reverse chaining, nested as
 * `_has:<Type>:<ref>:_has:…`): resources of the owner's type that a visible, current resource of
 * `<Type>` references through `<reference parameter>` and that matches `<parameter>=<value>`.
 * The referencing rows pass the caller's access rights, as a chain's targets do.
 */
function hasSql(p: SqlParams, owner: Owner, name: string, rawValue: string): string | undefined {
  const m = /^_has:([A-Za-z]+):([A-Za-z0-9-]+):(.+)$/.exec(name);
  if (!m || !isResourceType(m[1])) throw badRequest(`Invalid _has parameter '${name}': expected _has:<Type>:<reference parameter>:<parameter>`);
  const [, type, ref, inner] = m;
  const sp = searchParameter(type, ref);
  if (!sp) throw badRequest(`Unknown search parameter: ${ref}`);
  if (sp.type !== 'reference') throw badRequest(`Search parameter ${ref} is not a reference and cannot be used in _has`);
  const targets = ((sp.target ?? []) as string[]).filter(isResourceType);
  if (targets.length > 0 && !targets.includes(owner.type)) {
    throw badRequest(`Search parameter ${ref} of ${type} cannot reference ${owner.type}`);
  }
  const t = p.alias('t');
  const x = p.alias('x');
  const condition = filterSql(p, { alias: t, type }, inner, rawValue);
  if (condition === undefined) return undefined;
  return (
    `EXISTS (SELECT 1 FROM search_reference ${x} JOIN resource ${t} ON ${t}.resource_type = ${x}.resource_type AND ${t}.id = ${x}.id` +
    ` WHERE ${x}.resource_type = ${p.add(type)} AND ${x}.param = ${p.add(ref)} AND ${x}.target_type = ${p.add(owner.type)} AND ${x}.target_id = ${owner.alias}.id` +
    ` AND NOT ${t}.deleted AND ${p.visibility(t, 'r', type)} AND ${condition})`
  );
}

/** SQL of a parsed `_filter` (docs/rest.md#filter) about the owner row. */
function filterTreeSql(p: SqlParams, owner: Owner, node: FilterNode): string {
  switch (node.kind) {
    case 'and':
    case 'or':
      return `(${node.operands.map((operand) => filterTreeSql(p, owner, operand)).join(` ${node.kind.toUpperCase()} `)})`;
    case 'not':
      return `NOT (${filterTreeSql(p, owner, node.inner)})`;
    case 'compare':
      return comparisonSql(p, owner, node.path, node.op, node.value);
  }
}

/**
 * `po` (overlaps) on a date: the stored period (`low`..`high`, an open end unbounded) and the
 * value's range share an instant (docs/rest.md#filter).
 */
function overlapsSql(p: SqlParams, low: string, high: string, code: string, value: string): string {
  const range = parseDateRange(value);
  if (!range?.low || !range.high) throw badRequest(`Invalid date '${value}' for search parameter ${code}`);
  return `((${low} IS NULL OR ${low} < ${p.add(range.high)}::timestamptz) AND (${high} IS NULL OR ${high} > ${p.add(range.low)}::timestamptz))`;
}

/** Operators of `_filter` on each kind of parameter (the prefixes of date, number and quantity). */
const ORDERED_OPS = ['eq', 'ne', 'gt', 'lt', 'ge', 'le', 'ap', 'sa', 'eb'];

function comparisonSql(p: SqlParams, owner: Owner, path: string[], op: string, value: string): string {
  const [head, ...rest] = path;
  const [code, modifier] = splitModifier(head);
  const refuse = (): never => {
    throw badRequest(`Operator '${op}' is not supported for search parameter ${code} in _filter`);
  };
  if (rest.length > 0) {
    // Through a reference: `subject.name eq peter`, `subject:Patient.name eq peter`.
    checkKnown(owner.type, code);
    const sp = searchParameter(owner.type, code);
    if (!sp || sp.type !== 'reference') throw badRequest(`Search parameter ${code} is not a reference and cannot be chained`);
    if (modifier !== undefined && !isResourceType(modifier)) throw badRequest(`Unsupported modifier ':${modifier}' for search parameter ${code}`);
    const [restCode] = splitModifier(rest[0]);
    const declared = modifier !== undefined ? [modifier] : ((sp.target ?? []) as string[]).filter(isResourceType);
    const targets = declared.filter((type) => restCode === '_id' || restCode === '_lastUpdated' || searchParameter(type, restCode) !== undefined);
    if (targets.length === 0) throw badRequest(`Unknown search parameter: ${restCode}`);
    const x = p.alias('x');
    const t = p.alias('t');
    const branches = targets.map((type) => `(${t}.resource_type = ${p.add(type)} AND ${comparisonSql(p, { alias: t, type }, rest, op, value)})`);
    return (
      `EXISTS (SELECT 1 FROM search_reference ${x} JOIN resource ${t} ON ${t}.resource_type = ${x}.target_type AND ${t}.id = ${x}.target_id` +
      ` WHERE ${x}.resource_type = ${p.add(owner.type)} AND ${x}.id = ${owner.alias}.id AND ${x}.param = ${p.add(code)}` +
      ` AND NOT ${t}.deleted AND ${p.visibility(t)} AND (${branches.join(' OR ')}))`
    );
  }
  if (modifier !== undefined) throw badRequest(`Unsupported modifier ':${modifier}' for search parameter ${code} in _filter`);
  checkKnown(owner.type, code);
  if (code === '_id') {
    if (op !== 'eq' && op !== 'ne') refuse();
    const sql = `${owner.alias}.id = ${p.add(value)}`;
    return op === 'eq' ? sql : `NOT (${sql})`;
  }
  if (code === '_lastUpdated') {
    if (!ORDERED_OPS.includes(op) && op !== 'po') refuse();
    if (!parseDateRange(value)?.low) throw badRequest(`Invalid date '${value}' for search parameter ${code}`);
    const [low, high] = [`${owner.alias}.last_updated`, `(${owner.alias}.last_updated + interval '1 millisecond')`];
    return `(${op === 'po' ? overlapsSql(p, low, high, code, value) : dateMatch(p, low, high, code, `${op}${value}`)})`;
  }
  if (TEXT_PARAMETERS.has(code)) {
    if (op !== 'eq' && op !== 'co') refuse();
    return filterSql(p, owner, code, value.replace(/[\\,]/g, (c) => `\\${c}`)) ?? 'true';
  }
  const sp = searchParameter(owner.type, code)!;
  const table = tableFor(sp);
  if (!table) throw badRequest(`Search parameter ${code} is not supported in _filter`);
  const exists = (body: (x: string) => string): string => {
    const x = p.alias('x');
    return `EXISTS (SELECT 1 FROM search_${table} ${x} WHERE ${x}.resource_type = ${p.add(owner.type)} AND ${x}.id = ${owner.alias}.id AND ${x}.param = ${p.add(code)} AND (${body(x)}))`;
  };
  if (op === 'pr') {
    if (value !== 'true' && value !== 'false') throw badRequest(`Invalid value '${value}' for operator pr (expected true or false)`);
    const x = p.alias('x');
    const any = `EXISTS (SELECT 1 FROM search_${table} ${x} WHERE ${x}.resource_type = ${p.add(owner.type)} AND ${x}.id = ${owner.alias}.id AND ${x}.param = ${p.add(code)})`;
    return value === 'true' ? any : `NOT ${any}`;
  }
  const negate = (sql: string) => (op === 'ne' ? `NOT ${sql}` : sql);
  switch (table) {
    case 'string': {
      const normalized = normalizeText(value);
      if (op === 'eq' || op === 'ne') return negate(exists((x) => `${x}.value = ${p.add(normalized)}`));
      if (op === 'co') return exists((x) => stringMatch(p, x, 'contains', value));
      if (op === 'sw') return exists((x) => stringMatch(p, x, undefined, value));
      if (op === 'ew') return exists((x) => `${x}.value LIKE ${p.add(`%${escapeLike(normalized)}`)}`);
      return refuse();
    }
    case 'token':
      if (op === 'eq' || op === 'ne') return negate(exists((x) => tokenMatch(p, x, value)));
      // in, ni, sb, ss: answered by the terminology engine before the SQL is built (terminology.ts).
      if (FILTER_TERM_OPS[op] && p.terms?.has(termKey(owner.type, code, FILTER_TERM_OPS[op], value))) {
        return termSql(p, owner, code, FILTER_TERM_OPS[op], [value]);
      }
      return refuse();
    case 'reference':
      if (op === 'eq' || op === 're' || op === 'ne') return negate(exists((x) => referenceMatch(p, x, undefined, value)));
      return refuse();
    case 'uri':
      if (op === 'eq' || op === 'ne') return negate(exists((x) => uriMatch(p, x, undefined, value)));
      if (op === 'sw') return exists((x) => uriMatch(p, x, 'below', value));
      return refuse();
    case 'date':
      if (!ORDERED_OPS.includes(op) && op !== 'po') return refuse();
      if (!parseDateRange(value)?.low) throw badRequest(`Invalid date '${value}' for search parameter ${code}`);
      if (op === 'po') return exists((x) => overlapsSql(p, `${x}.low`, `${x}.high`, code, value));
      return exists((x) => dateMatch(p, `${x}.low`, `${x}.high`, code, `${op}${value}`));
    case 'number':
      if (!ORDERED_OPS.includes(op)) return refuse();
      return exists((x) => numberMatch(p, `${x}.value`, code, `${op}${value}`));
    case 'quantity':
      if (!ORDERED_OPS.includes(op)) return refuse();
      return exists((x) => quantityMatch(p, x, code, `${op}${value}`));
  }
}
