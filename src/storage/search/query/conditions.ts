import { FhirError, badRequest, issue } from '../../../fhir/outcome.js';
import { isResourceType } from '../../../fhir/definitions.js';
import { parseDateRange } from '../../../fhir/date-range.js';
import { UCUM_SYSTEM, ucumBeyondBounds, ucumConversion } from '../../../fhir/ucum.js';
import { clip, escapeLike, normalizeText } from '../normalize.js';
import { identifierParameter, searchParameter, type CompositeComponent, type IndexTable } from '../parameters.js';
import { dateComparison, numberComparison } from './comparisons.js';
import type { SqlParams } from './sql-params.js';
import { parseSearchNumber, splitPipe, splitPrefix, unescapeValue } from './values.js';
import { TERMINOLOGY_MODIFIERS, termKey } from './terminology.js';

/** The `resource` row a condition is about: its alias in the query and its resource type. */
export interface Owner {
  alias: string;
  type: string;
}

/** One parameter of a search, after the name was resolved: `name:exact=Eve,Ann`. */
export interface Criterion {
  code: string;
  table: IndexTable;
  modifier: string | undefined;
  /** The comma-separated values, still escaped. */
  values: string[];
}

/** Modifiers each table understands (besides `missing`, which all do, and a reference's `:<Type>`). */
export const MODIFIERS: Record<IndexTable, string[]> = {
  string: ['exact', 'contains'],
  token: ['not', 'text', 'of-type', ...TERMINOLOGY_MODIFIERS],
  reference: [],
  date: [],
  number: [],
  quantity: [],
  uri: ['below', 'above'],
};

/**
 * SQL for one criterion: an EXISTS over the parameter's index table, with the values ORed.
 * `:missing` tests for the absence of any row, `:not` for the absence of a matching one.
 */
export function criterionSql(p: SqlParams, owner: Owner, c: Criterion): string {
  const exists = (body?: (x: string) => string, ordered = false): string => {
    const x = p.alias('x');
    const [type, param] = [p.add(owner.type), p.add(c.code)];
    const head = `SELECT 1 FROM search_${c.table} ${x} WHERE ${x}.resource_type = ${type} AND ${x}.id = ${owner.alias}.id AND ${x}.param = ${param}`;
    const match = body ? ` AND (${body(x)})` : '';
    const sql = `EXISTS (${head}${match})`;
    p.indexed.set(sql, { table: c.table, alias: x, rows: `${x}.resource_type = ${type} AND ${x}.param = ${param}${match}`, ordered });
    return sql;
  };
  if (c.modifier === 'missing') {
    if (c.values.length !== 1 || !['true', 'false'].includes(c.values[0])) {
      throw badRequest(`Invalid value '${c.values.join(',')}' for ${c.code}:missing (expected true or false)`);
    }
    return c.values[0] === 'true' ? `NOT ${exists()}` : exists();
  }
  const typeModifier = c.table === 'reference' && c.modifier !== undefined && isResourceType(c.modifier);
  const sp = c.modifier === 'of-type' ? searchParameter(owner.type, c.code) : undefined;
  const ofTypeRefused = c.modifier === 'of-type' && (!sp || !identifierParameter(sp));
  if (c.modifier !== undefined && !typeModifier && (ofTypeRefused || !MODIFIERS[c.table].includes(c.modifier))) {
    throw badRequest(`Unsupported modifier ':${c.modifier}' for search parameter ${c.code}`);
  }
  const anyOf = (x: string, one: (value: string, x: string) => string): string =>
    c.values.map((v) => `(${one(v, x)})`).join(' OR ');
  switch (c.table) {
    case 'string':
      return exists((x) => anyOf(x, (v) => stringMatch(p, x, c.modifier, unescapeValue(v))));
    case 'token':
      if (c.modifier === 'not') return `NOT ${exists((x) => anyOf(x, (v) => tokenMatch(p, x, v)))}`;
      if (c.modifier === 'text') return exists((x) => anyOf(x, (v) => `${x}.text_value LIKE ${p.add(`${escapeLike(normalizeText(unescapeValue(v)))}%`)}`));
      if (c.modifier !== undefined && TERMINOLOGY_MODIFIERS.includes(c.modifier)) return termSql(p, owner, c.code, c.modifier, c.values);
      if (c.modifier === 'of-type') return ofTypeSql(p, owner, c);
      return exists((x) => anyOf(x, (v) => tokenMatch(p, x, v)), c.values.length === 1 && splitPipe(c.values[0])[1] !== '');
    case 'reference': {
      // One `Type/id` or bare id: the rows of one target id.
      const keyed = c.values.length === 1 && (RELATIVE.test(unescapeValue(c.values[0])) || ID.test(unescapeValue(c.values[0])));
      return exists((x) => anyOf(x, (v) => referenceMatch(p, x, typeModifier ? c.modifier : undefined, unescapeValue(v))), keyed);
    }
    case 'uri':
      return exists((x) => anyOf(x, (v) => uriMatch(p, x, c.modifier, unescapeValue(v))));
    case 'date':
      return exists((x) => anyOf(x, (v) => dateMatch(p, `${x}.low`, `${x}.high`, c.code, v)));
    case 'number':
      return exists((x) => anyOf(x, (v) => numberMatch(p, `${x}.value`, c.code, v)));
    case 'quantity':
      return exists((x) => anyOf(x, (v) => quantityMatch(p, x, c.code, v)));
  }
}

/**
 * `identifier:of-type=<type system>|<type code>|<value>`: identifiers whose type has that coding
 * and whose value is that value. Their rows are indexed under `<param>:of-type` (extract.ts),
 * with the type's system and `<type code>|<value>` as the code.
 */
function ofTypeSql(p: SqlParams, owner: Owner, c: Criterion): string {
  const x = p.alias('x');
  const branches = c.values.map((v) => {
    const [system, rest] = splitPipe(v);
    const [typeCode, value] = splitPipe(rest);
    if (system === undefined || typeCode === undefined || typeCode === '' || value === '') {
      throw badRequest(`Invalid value '${v}' for ${c.code}:of-type (expected <type system>|<type code>|<value>)`);
    }
    const systemSql = system === '' ? `${x}.system IS NULL` : `${x}.system = ${p.add(clip(system))}`;
    return `(${systemSql} AND ${x}.code = ${p.add(clip(`${typeCode}|${unescapeValue(value)}`))})`;
  });
  return (
    `EXISTS (SELECT 1 FROM search_token ${x} WHERE ${x}.resource_type = ${p.add(owner.type)} AND ${x}.id = ${owner.alias}.id` +
    ` AND ${x}.param = ${p.add(`${c.code}:of-type`)} AND (${branches.join(' OR ')}))`
  );
}

export function stringMatch(p: SqlParams, x: string, modifier: string | undefined, value: string): string {
  const normalized = normalizeText(value);
  if (modifier === 'exact') return `${x}.value = ${p.add(normalized)} AND ${x}.raw = ${p.add(value)}`;
  if (modifier === 'contains') return `${x}.value LIKE ${p.add(`%${escapeLike(normalized)}%`)}`;
  return `${x}.value LIKE ${p.add(`${escapeLike(normalized)}%`)}`;
}

/** `code`, `system|code`, `|code` (no system), `system|` (any code of the system). */
export function tokenMatch(p: SqlParams, x: string, value: string): string {
  const [system, rawCode] = splitPipe(value);
  const code = clip(unescapeValue(rawCode));
  if (system === undefined) return `${x}.code = ${p.add(code)}`;
  const systemSql = system === '' ? `${x}.system IS NULL` : `${x}.system = ${p.add(clip(system))}`;
  return code === '' ? systemSql : `${systemSql} AND ${x}.code = ${p.add(code)}`;
}

const RELATIVE = /^([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[^/]+)?$/;
const ABSOLUTE_TAIL = /\/([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[^/]+)?$/;
const ID = /^[A-Za-z0-9\-.]{1,64}$/;

/** `Type/id`, a bare `id` (any type, or the `:Type` modifier's), an absolute URL or a canonical. */
export function referenceMatch(p: SqlParams, x: string, type: string | undefined, value: string): string {
  const target = (t: string, id: string): string =>
    type !== undefined && type !== t ? 'false' : `${x}.target_type = ${p.add(t)} AND ${x}.target_id = ${p.add(id)}`;
  const relative = RELATIVE.exec(value);
  if (relative) return target(relative[1], relative[2]);
  if (/^[a-z][a-z0-9+.-]*:/i.test(value)) {
    // An absolute URL names the resource under any base; a canonical matches with or without `|version`.
    const text = clip(value);
    const byText = `${x}.reference = ${p.add(text)} OR ${x}.reference LIKE ${p.add(`${escapeLike(text)}|%`)}`;
    const tail = ABSOLUTE_TAIL.exec(value);
    return tail ? `${byText} OR (${target(tail[1], tail[2])})` : byText;
  }
  if (ID.test(value)) {
    const idSql = `${x}.target_id = ${p.add(value)}`;
    return type === undefined ? idSql : `${idSql} AND ${x}.target_type = ${p.add(type)}`;
  }
  return `${x}.reference = ${p.add(clip(value))}`;
}

export function uriMatch(p: SqlParams, x: string, modifier: string | undefined, value: string): string {
  const text = clip(value);
  if (modifier === 'below') return `${x}.value LIKE ${p.add(`${escapeLike(text)}%`)}`;
  if (modifier === 'above') return `starts_with(${p.add(text)}::text, ${x}.value)`;
  return `${x}.value = ${p.add(text)}`;
}

/** A prefixed date value against a stored range (columns or expressions `low`/`high`). */
export function dateMatch(p: SqlParams, low: string, high: string, code: string, value: string): string {
  const [prefix, text] = splitPrefix(value);
  const range = parseDateRange(text);
  if (!range?.low || !range.high) throw badRequest(`Invalid date '${value}' for search parameter ${code}`);
  const { low: ql, high: qh } = range;
  return dateComparison(prefix, low, high, () => `${p.add(ql)}::timestamptz`, () => `${p.add(qh)}::timestamptz`);
}

export function numberMatch(p: SqlParams, column: string, code: string, value: string): string {
  const [prefix, text] = splitPrefix(value);
  return numberComparison(prefix, column, parseSearchNumber(text, code), (v) => p.add(v));
}

/** `[prefix]number|system|code`; system and code are optional (`5.4||mg`, `5.4`). */
export function quantityMatch(p: SqlParams, x: string, code: string, value: string): string {
  const [numberText, rest] = splitPipe(value);
  // The rows of canonical units count only for a converted UCUM value (below).
  if (numberText === undefined) return `${numberMatch(p, `${x}.value`, code, unescapeValue(rest))} AND NOT ${x}.canonical`;
  const [system, unit] = splitPipe(rest);
  // A UCUM unit: compared in its canonical unit, where every UCUM quantity is also indexed
  // (convert.ts), so `5.4|…|mg` finds 5400 ug (docs/rest.md#quantity-search).
  const beyond = system === UCUM_SYSTEM && unit ? ucumBeyondBounds(unescapeValue(unit)) : undefined;
  if (beyond) throw new FhirError(400, [issue('too-costly', `Search parameter ${code}: the UCUM unit cannot be converted: ${beyond}`)]);
  const conversion = system === UCUM_SYSTEM && unit ? ucumConversion(unescapeValue(unit)) : undefined;
  if (conversion) {
    const [prefix, text] = splitPrefix(numberText);
    const n = parseSearchNumber(text, code);
    const canonical = { value: n.value * conversion.factor + conversion.offset, halfWidth: n.halfWidth * conversion.factor };
    return `${numberComparison(prefix, `${x}.value`, canonical, (v) => p.add(v))} AND ${x}.system = ${p.add(UCUM_SYSTEM)} AND ${x}.code = ${p.add(conversion.unit)}`;
  }
  const parts = [numberMatch(p, `${x}.value`, code, numberText), `NOT ${x}.canonical`];
  const systemText = system ?? unit; // `5.4|system` without a code
  const unitText = system === undefined ? '' : unescapeValue(unit);
  if (systemText !== '') parts.push(`${x}.system = ${p.add(systemText)}`);
  if (unitText !== '') parts.push(`(${x}.code = ${p.add(unitText)} OR ${x}.unit = ${p.add(unitText)})`);
  return parts.join(' AND ');
}

/**
 * One value of a composite parameter, `<component 1>$<component 2>…` (docs/rest.md#composite-parameters):
 * the components must match values of ONE item of the composite's base (rows
 * `<code>#<i>.<k>`, extract.ts) — the first component's row names the item, the others join on it.
 */
export function compositeSql(p: SqlParams, owner: Owner, code: string, components: CompositeComponent[], value: string): string {
  const parts = splitDollar(value);
  if (parts.length !== components.length || parts.some((v) => v === '')) {
    throw badRequest(`Invalid value '${value}' for composite search parameter ${code}: expected ${components.length} values separated by '$'`);
  }
  const aliases = components.map(() => p.alias('k'));
  const first = aliases[0];
  const conditions = components.map((c, k) => {
    const x = aliases[k];
    const param = k === 0 ? `${x}.param LIKE ${p.add(`${escapeLike(code)}#%.0`)}` : `${x}.param = split_part(${first}.param, '.', 1) || ${p.add(`.${k}`)}`;
    return `${x}.resource_type = ${p.add(owner.type)} AND ${x}.id = ${owner.alias}.id AND ${param} AND (${componentMatch(p, x, c, parts[k])})`;
  });
  let sql = '';
  for (let k = components.length - 1; k >= 0; k--) {
    const inner = sql === '' ? '' : ` AND ${sql}`;
    sql = `EXISTS (SELECT 1 FROM search_${components[k].table} ${aliases[k]} WHERE ${conditions[k]}${inner})`;
  }
  return sql;
}

function componentMatch(p: SqlParams, x: string, c: CompositeComponent, value: string): string {
  switch (c.table) {
    case 'string':
      return stringMatch(p, x, undefined, unescapeValue(value));
    case 'token':
      return tokenMatch(p, x, value);
    case 'reference':
      return referenceMatch(p, x, undefined, unescapeValue(value));
    case 'uri':
      return uriMatch(p, x, undefined, unescapeValue(value));
    case 'date':
      return dateMatch(p, `${x}.low`, `${x}.high`, c.code, value);
    case 'number':
      return numberMatch(p, `${x}.value`, c.code, value);
    case 'quantity':
      return quantityMatch(p, x, c.code, value);
  }
}

/** Splits a composite value at each unescaped `$`. */
function splitDollar(value: string): string[] {
  const out: string[] = [];
  let start = 0;
  for (let i = 0; i < value.length; i++) {
    if (value[i] === '\\') i++;
    else if (value[i] === '$') {
      out.push(value.slice(start, i));
      start = i + 1;
    }
  }
  out.push(value.slice(start));
  return out;
}

/**
 * A terminology criterion (`:below`, `:above`, `:in`, `:not-in`) from the stored codings the
 * pre-pass found (terminology.ts): those codings, or for `not-in` none of them.
 */
export function termSql(p: SqlParams, owner: Owner, code: string, modifier: string, values: string[]): string {
  const codings = values.flatMap((v) => {
    const found = p.terms?.get(termKey(owner.type, code, modifier, v));
    if (!found) throw badRequest(`Modifier :${modifier} of search parameter ${code} is not supported in a chain or _has`);
    return found;
  });
  const x = p.alias('x');
  const member =
    codings.length === 0
      ? 'false'
      : `EXISTS (SELECT 1 FROM search_token ${x} WHERE ${x}.resource_type = ${p.add(owner.type)} AND ${x}.id = ${owner.alias}.id AND ${x}.param = ${p.add(code)}` +
        ` AND (${x}.system, ${x}.code) IN (SELECT * FROM unnest(${p.add(codings.map(([s]) => s))}::text[], ${p.add(codings.map(([, k]) => k))}::text[])))`;
  return modifier === 'not-in' ? `NOT ${member}` : member;
}
